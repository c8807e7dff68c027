package executor

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Options configure an Executor. Zero values take the defaults.
type Options struct {
	DefaultTimeout      time.Duration    // for requests without a Timeout; default 15s
	MaxIdleConnsPerHost int              // keep-alive connections kept per target; default 512
	UserAgent           string           // default "Sundial/1"
	MaxBodyBytes        int              // the largest rendered body; default DefaultMaxBodyBytes
	Guard               *Guard           // checks every address dialled; nil: a zero Guard (only what is always refused)
	Now                 func() time.Time // the clock of Outcome.Started and Finished; default time.Now
}

// Executor delivers requests over one shared HTTP transport. It is safe
// for concurrent use.
type Executor struct {
	client         *http.Client
	transport      *http.Transport
	defaultTimeout time.Duration
	userAgent      string
	maxBody        int
	now            func() time.Time
}

const (
	bodyLimit         = 4 << 10  // bytes of a response body kept in the Outcome
	drainLimit        = 64 << 10 // bytes more read so the connection can be reused
	maxResponseHeader = 64 << 10 // bytes of a response's header; more fails the delivery
)

// DefaultTimeout is a delivery's timeout when neither its request nor
// Options say.
const DefaultTimeout = 15 * time.Second

// errTimeout is the cause of a delivery's context when its timeout elapses.
var errTimeout = errors.New("delivery timed out")

// New returns an Executor with opts, defaults filled in.
func New(opts Options) *Executor {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxIdleConnsPerHost <= 0 {
		opts.MaxIdleConnsPerHost = 512
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "Sundial/1"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Guard == nil {
		opts.Guard = &Guard{}
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, ControlContext: opts.Guard.control}
	t := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           0, // no limit across targets; MaxIdleConnsPerHost bounds each
		MaxIdleConnsPerHost:    opts.MaxIdleConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: maxResponseHeader,
	}
	return &Executor{
		client:         &http.Client{Transport: t},
		transport:      t,
		defaultTimeout: opts.DefaultTimeout,
		userAgent:      opts.UserAgent,
		maxBody:        opts.MaxBodyBytes,
		now:            opts.Now,
	}
}

// Close closes the idle connections. The Executor stays usable.
func (e *Executor) Close() {
	e.transport.CloseIdleConnections()
}

// Deliver makes req's HTTP call and reports how it went. It never panics
// on a bad request: that is a FAILED outcome saying what is wrong.
func (e *Executor) Deliver(ctx context.Context, req Request) Outcome {
	out := Outcome{Started: e.now()}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = e.defaultTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()

	hreq, err := e.newRequest(ctx, &req)
	if err != nil {
		return e.finish(out, StatusFailed, err.Error())
	}
	client := *e.client
	client.CheckRedirect = checkRedirect(&req)
	resp, err := client.Do(hreq)
	if err != nil {
		if status, msg, ok := ctxFailure(ctx, timeout); ok {
			return e.finish(out, status, msg)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the `Post "http://...":` prefix
		}
		return e.finish(out, StatusFailed, err.Error())
	}
	out.HTTPStatus = resp.StatusCode
	out.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), resp.Header.Get("Date"), e.now())
	out.Body, err = readBody(resp.Body)
	resp.Body.Close()
	if err != nil {
		if status, msg, ok := ctxFailure(ctx, timeout); ok {
			return e.finish(out, status, msg)
		}
		return e.finish(out, StatusFailed, "read response body: "+err.Error())
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return e.finish(out, StatusFailed, statusError(resp.StatusCode))
	}
	return e.finish(out, StatusSuccess, "")
}

func (e *Executor) finish(out Outcome, status, msg string) Outcome {
	out.Status = status
	out.Error = msg
	out.Finished = e.now()
	return out
}

// ctxFailure tells whether the delivery's context ended, and if so whether
// by its own timeout or by the caller.
func ctxFailure(ctx context.Context, timeout time.Duration) (status, msg string, ok bool) {
	if ctx.Err() == nil {
		return "", "", false
	}
	cause := context.Cause(ctx)
	if cause == errTimeout {
		return StatusTimeout, "timed out after " + timeout.String(), true
	}
	return StatusCanceled, "canceled: " + cause.Error(), true
}

var bodyBufs = sync.Pool{New: func() any { return new([bodyLimit]byte) }}

// readBody returns the first bodyLimit bytes of r, then drains up to
// drainLimit more so that a short body ends at EOF and frees the
// connection. An error from the drain is not the delivery's concern.
func readBody(r io.Reader) (string, error) {
	buf := bodyBufs.Get().(*[bodyLimit]byte)
	defer bodyBufs.Put(buf)
	n, err := io.ReadFull(r, buf[:])
	body := string(buf[:n])
	switch err {
	case io.EOF, io.ErrUnexpectedEOF:
		return body, nil
	case nil:
	default:
		return body, err
	}
	for left := drainLimit; left > 0; {
		n, err := r.Read(buf[:min(left, len(buf))])
		left -= n
		if err != nil {
			break
		}
	}
	return body, nil
}
