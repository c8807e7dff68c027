package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

const targetUsage = `Usage: sundial target [--listen ADDR]

Run an HTTP target to try tasks against: it answers every request with 200,
or with the status and after the delay its query asks for
(http://127.0.0.1:9000/any/path?status=503&delay=2s), and prints each request
it receives: time, method, path and query, the Sundial headers,
Idempotency-Key, traceparent and the body. It stops on SIGINT or SIGTERM.

Flags:
  --listen string
        address to listen on; keep it on loopback (default 127.0.0.1:9000)
`

// Bounds of what a request to the target may ask for.
const (
	targetMaxDelay   = 10 * time.Minute
	targetBodyLimit  = 1 << 20 // bytes of a request body read
	targetBodyPrint  = 4 << 10 // bytes of it printed
	targetStopGrace  = 2 * time.Second
	targetHeaderWait = 10 * time.Second
)

// runTarget runs "sundial target" until ctx is cancelled.
func runTarget(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sundial target", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	listen := fs.String("listen", "127.0.0.1:9000", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, err := io.WriteString(stderr, targetUsage)
			return err
		}
		return usageErrorf("target: %v; run 'sundial target -h' for the flags", err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("target: unexpected argument %q", fs.Arg(0))
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Requests waiting out a delay end when the target stops.
	reqCtx, cancelReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()
	srv := &http.Server{
		Handler:           &targetHandler{out: stdout, now: time.Now},
		ReadHeaderTimeout: targetHeaderWait,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "Sundial target listening on http://%s ; it answers 200, or what ?status=503&delay=2s asks for\n", ln.Addr())

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("serve http: %w", err)
	}
	cancelReqs()
	stopCtx, cancel := context.WithTimeout(context.Background(), targetStopGrace)
	defer cancel()
	if err := srv.Shutdown(stopCtx); err != nil {
		_ = srv.Close()
	}
	fmt.Fprintln(stdout, "Sundial target stopped")
	return nil
}

// targetHandler is the handler of "sundial target": it prints each request and
// answers as its query asks.
type targetHandler struct {
	mu  sync.Mutex // one request printed at a time
	out io.Writer
	now func() time.Time
}

func (tg *targetHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := tg.now()
	body, _ := io.ReadAll(io.LimitReader(r.Body, targetBodyLimit+1))
	status, delay, err := targetAnswer(r.URL.Query())
	answer := fmt.Sprintf("%d %s", status, http.StatusText(status))
	if delay > 0 {
		answer += " after " + delay.String()
	}
	if err != nil {
		status, answer = http.StatusBadRequest, "400 Bad Request: "+err.Error()
	}
	tg.print(at, r, body, answer)
	if err != nil {
		http.Error(w, "sundial target: "+err.Error(), status)
		return
	}
	if delay > 0 {
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return // the caller gave up, or the target stops
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":%d}`, status)
}

// targetAnswer reads the status and delay a request asks for: status from
// 200 to 599 (default 200), delay a duration up to targetMaxDelay (default
// none). Other query parameters are the caller's own.
func targetAnswer(q url.Values) (status int, delay time.Duration, err error) {
	status = http.StatusOK
	if v := q.Get("status"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 200 || n > 599 {
			return status, 0, fmt.Errorf("status %q: want a number from 200 to 599", v)
		}
		status = n
	}
	if v := q.Get("delay"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > targetMaxDelay {
			return status, 0, fmt.Errorf("delay %q: want a duration from 0s to %s, such as 2s or 500ms", v, shortDuration(targetMaxDelay))
		}
		delay = d
	}
	return status, delay, nil
}

// targetHeaders are printed in this order when a request has them; any
// other X-Sundial-* header follows, by name.
var targetHeaders = []string{
	"X-Sundial-Run-Id", "X-Sundial-Task-Id", "X-Sundial-Scheduled-Time", "X-Sundial-Trigger",
	"X-Sundial-Attempt", "X-Sundial-Delivery", "X-Sundial-Node",
	"X-Sundial-Callback-Url", "X-Sundial-Callback-Token", "X-Sundial-Checkpoint",
	"Idempotency-Key", "Traceparent", "Content-Type",
}

// print writes one request as a block: a line with the time, method,
// path and query and the answer, then the headers and the body, indented.
func (tg *targetHandler) print(at time.Time, r *http.Request, body []byte, answer string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s %s  -> %s\n", at.UTC().Format("2006-01-02T15:04:05.000Z07:00"), r.Method, r.URL.RequestURI(), answer)
	names := slices.Clone(targetHeaders)
	var extra []string
	for name := range r.Header {
		if strings.HasPrefix(name, "X-Sundial-") && !slices.Contains(names, name) {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range append(names, extra...) {
		for _, v := range r.Header.Values(name) {
			if name == "Traceparent" {
				name = "traceparent" // as W3C Trace Context spells it
			}
			fmt.Fprintf(&b, "    %s: %s\n", name, v)
		}
	}
	if len(body) > 0 {
		writeBody(&b, body)
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	io.WriteString(tg.out, b.String())
}

// writeBody writes a request body, indented: text as it is, up to
// targetBodyPrint bytes, anything else quoted.
func writeBody(b *strings.Builder, body []byte) {
	more := ""
	if len(body) > targetBodyLimit {
		body, more = body[:targetBodyLimit], " (and more, not read)"
	}
	if len(body) > targetBodyPrint {
		cut := body[:targetBodyPrint]
		for i := 0; i < utf8.UTFMax-1 && !utf8.Valid(cut); i++ {
			cut = cut[:len(cut)-1] // do not split a character
		}
		if !utf8.Valid(cut) {
			cut = body[:targetBodyPrint] // not text: quoted anyway
		}
		more = fmt.Sprintf(" (%d more bytes%s)", len(body)-len(cut), more)
		body = cut
	}
	text := string(body)
	if !utf8.ValidString(text) || strings.ContainsFunc(text, func(r rune) bool {
		return r < ' ' && r != '\n' && r != '\r' && r != '\t'
	}) {
		text = strconv.Quote(text)
	}
	b.WriteString("    body:\n")
	for line := range strings.Lines(text) {
		b.WriteString("      " + strings.TrimRight(line, "\r\n") + "\n")
	}
	if more != "" {
		b.WriteString("      ..." + more + "\n")
	}
}
