package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultServer is where the client commands talk when nothing says where.
const defaultServer = "http://127.0.0.1:8080"

// Bounds of the client's requests.
const (
	clientTimeout   = time.Minute // one request, its answer read
	clientMaxAnswer = 64 << 20    // bytes of an answer read
	clientRetries   = 3           // a GET answered 429 or 503 is sent again this often
	clientMaxWait   = 10 * time.Second
	maxPageSize     = 1000 // the API's largest page
)

// connFlags are the flags every client command takes: where it talks.
type connFlags struct {
	server, token, context, caFile string
}

// clientFlags adds the connection flags to a client command and its
// subcommands.
func (c *cli) clientFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&c.conn.server, "server", "", "the server's URL (default: SUNDIAL_SERVER, the context's, or "+defaultServer+")")
	f.StringVar(&c.conn.token, "token", "", "the API token (default: SUNDIAL_TOKEN, or the context's)")
	f.StringVar(&c.conn.context, "context", "", "the context to use in place of the current one (see sundial config)")
	f.StringVar(&c.conn.caFile, "ca-file", "", "PEM file of the CA certificates that sign the server's (default: SUNDIAL_CA_FILE, or the context's)")
	_ = cmd.RegisterFlagCompletionFunc("context", c.completeContexts)
}

// endpoint is where a client command talks, and how it says who it is.
type endpoint struct {
	server  string // the URL
	token   string
	caFile  string
	context string // the context it came from, "" for none
}

// endpoint resolves where the client commands talk. Each setting is, first
// found: its flag (--server, --token, --ca-file); the context --context
// names; the environment (SUNDIAL_SERVER, SUNDIAL_TOKEN, SUNDIAL_CA_FILE);
// the current context of the contexts file; the default
// (http://127.0.0.1:8080, no token). A context named by --context is
// chosen on purpose, so it beats the environment; the current one is a
// default, so the environment beats it.
func (c *cli) endpoint() (endpoint, error) {
	cc, path, err := c.loadContexts()
	if err != nil {
		return endpoint{}, err
	}
	var named, current *clientContext
	if c.conn.context != "" {
		if named = cc.find(c.conn.context); named == nil {
			return endpoint{}, usageErrorf("--context: no context named %q in %s%s", c.conn.context, path, contextNames(cc))
		}
	} else if cc.CurrentContext != "" {
		if current = cc.find(cc.CurrentContext); current == nil {
			return endpoint{}, usageErrorf("contexts file %s: the current context %q is not one of its contexts%s",
				path, cc.CurrentContext, contextNames(cc))
		}
	}
	pick := func(flag, env string, field func(*clientContext) string, def string) string {
		switch {
		case flag != "":
			return flag
		case named != nil && field(named) != "":
			return field(named)
		case c.getenv(env) != "":
			return c.getenv(env)
		case current != nil && field(current) != "":
			return field(current)
		}
		return def
	}
	e := endpoint{
		server: pick(c.conn.server, "SUNDIAL_SERVER", func(x *clientContext) string { return x.Server }, defaultServer),
		token:  pick(c.conn.token, "SUNDIAL_TOKEN", func(x *clientContext) string { return x.Token }, ""),
		caFile: pick(c.conn.caFile, "SUNDIAL_CA_FILE", func(x *clientContext) string { return x.CAFile }, ""),
	}
	if named != nil {
		e.context = named.Name
	} else if current != nil {
		e.context = current.Name
	}
	return e, nil
}

// parseServer checks a server URL: absolute, http or https, no query. A
// bare host:port, as serve's listen setting is written, is http.
func parseServer(raw string) (*url.URL, error) {
	full := raw
	if !strings.Contains(raw, "://") {
		full = "http://" + raw
	}
	u, err := url.Parse(full)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%q: want an http or https URL such as %s or https://sundial.example.com", raw, defaultServer)
	}
	return u, nil
}

// apiClient sends requests to the REST API of one server.
type apiClient struct {
	base  *url.URL // the server; its path prefixes /api/v1
	token string
	http  *http.Client
}

// client returns the API client of the endpoint the flags, the
// environment and the contexts give.
func (c *cli) client() (*apiClient, error) {
	e, err := c.endpoint()
	if err != nil {
		return nil, err
	}
	u, err := parseServer(e.server)
	if err != nil {
		from := "--server"
		if c.conn.server == "" {
			from = "the server"
			if e.context != "" {
				from = "the server of context " + strconv.Quote(e.context)
			}
		}
		return nil, usageErrorf("%s: %v", from, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if e.caFile != "" {
		pem, err := os.ReadFile(e.caFile)
		if err != nil {
			return nil, usageErrorf("CA file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErrorf("CA file %s: no PEM certificate in it", e.caFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &apiClient{base: u, token: e.token, http: &http.Client{Transport: transport, Timeout: clientTimeout}}, nil
}

// remoteError is an error answer of the API: {"error": {"code", "message",
// "field", "token"}}.
type remoteError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field"`
	Token   string `json:"token"`
}

// Error is the message, then the field and the token it names, and for a
// missing or refused token how to give one.
func (e *remoteError) Error() string {
	msg := e.Message
	var at []string
	if e.Field != "" {
		at = append(at, "field "+e.Field)
	}
	if e.Token != "" {
		at = append(at, "token "+strconv.Quote(e.Token))
	}
	if len(at) > 0 {
		msg += " (" + strings.Join(at, ", ") + ")"
	}
	if e.Status == http.StatusUnauthorized && e.Code == "unauthorized" {
		msg += "; give an API token with --token, SUNDIAL_TOKEN or a context (sundial config set-context NAME --token TOKEN)"
	}
	return msg
}

// notFound reports whether err is the API's 404.
func notFound(err error) bool {
	e, ok := errors.AsType[*remoteError](err)
	return ok && e.Status == http.StatusNotFound
}

// url is the address of path (which starts /api/v1 or /) with the query q.
func (a *apiClient) url(path string, q url.Values) string {
	u := *a.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = q.Encode()
	return u.String()
}

// do sends a request with body (JSON-encoded, none if nil) and decodes a
// 2xx answer into out (if not nil). An error answer is an *remoteError; a GET
// answered 429 or 503 is sent again after its Retry-After, a few times.
func (a *apiClient) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	_, err := a.send(ctx, method, path, q, body, out, nil)
	return err
}

// send is do with more headers for the request (If-Match, or a
// Content-Type other than application/json), and returns the answer's.
func (a *apiClient) send(ctx context.Context, method, path string, q url.Values, body, out any, header http.Header) (http.Header, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		var rd io.Reader
		if data != nil {
			rd = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(ctx, method, a.url(path, q), rd)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "sundial-cli/"+cliVersion())
		if method != http.MethodGet {
			// Without a token, it is how the API tells a client from a web
			// page's form.
			req.Header.Set("Content-Type", "application/json")
		}
		if a.token != "" {
			req.Header.Set("Authorization", "Bearer "+a.token)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := a.http.Do(req)
		if err != nil {
			return nil, a.connError(ctx, err)
		}
		answer, err := io.ReadAll(io.LimitReader(resp.Body, clientMaxAnswer))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
		}
		if (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) &&
			method == http.MethodGet && attempt < clientRetries {
			wait := time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = min(time.Duration(s)*time.Second, clientMaxWait)
			}
			if err := sleep(ctx, wait); err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode >= 300 {
			return resp.Header, answerError(resp, answer, method, path)
		}
		switch out := out.(type) {
		case nil:
		case *[]byte: // the answer as it is, of any type
			*out = answer
		default:
			if len(answer) == 0 {
				break
			}
			if err := json.Unmarshal(answer, out); err != nil {
				return nil, fmt.Errorf("the answer to %s %s is not what the Sundial API answers (%v): is %s a Sundial server?",
					method, path, err, a.base.Redacted())
			}
		}
		return resp.Header, nil
	}
}

// answerError is the error of a non-2xx answer: the API's own, or one
// that says what else answered.
func answerError(resp *http.Response, body []byte, method, path string) error {
	var shape struct {
		Error *remoteError `json:"error"`
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "application/json" && json.Unmarshal(body, &shape) == nil && shape.Error != nil && shape.Error.Message != "" {
		shape.Error.Status = resp.StatusCode
		return shape.Error
	}
	what := ct
	if what == "" {
		what = "no content type"
	}
	return fmt.Errorf("%s %s: the server answered %s (%s), not a Sundial API error: is it a Sundial server?",
		method, path, resp.Status, what)
}

// connError says that the server could not be reached, and where the
// address came from.
func (a *apiClient) connError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	hint := ""
	if errors.As(err, &op) && op.Op == "dial" {
		hint = " (is a Sundial server running there? --server, SUNDIAL_SERVER or a context say where it is)"
	}
	return fmt.Errorf("cannot reach the Sundial API at %s: %v%s", a.base.Redacted(), err, hint)
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// listPage is a page of a list: {"items": [...], "next_cursor": "..."}.
type listPage struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"next_cursor"`
}

// list reads the list at path with the filters q, page after page, up to
// max items (0: all of them).
func (a *apiClient) list(ctx context.Context, path string, q url.Values, max int) ([]json.RawMessage, error) {
	q = cloneValues(q)
	var all []json.RawMessage
	for {
		size := maxPageSize
		if max > 0 {
			size = min(size, max-len(all))
		}
		q.Set("limit", strconv.Itoa(size))
		var p listPage
		if err := a.do(ctx, http.MethodGet, path, q, nil, &p); err != nil {
			return nil, err
		}
		all = append(all, p.Items...)
		if p.NextCursor == "" || (max > 0 && len(all) >= max) {
			return all, nil
		}
		q.Set("cursor", p.NextCursor)
	}
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// cliVersion is the version the client sends in its User-Agent.
func cliVersion() string {
	if version != "" {
		return version
	}
	return "devel"
}
