package api

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/sundialhq/sundial"
)

// net/http answers a request it cannot read (a malformed request line,
// headers too large, an HTTP version or transfer encoding it does not
// take) itself, before any handler runs, in plain text. Each such answer
// is written in one Write of a fixed shape:
//
//	HTTP/1.1 <code> <text>[: <detail>]\r\n
//	Content-Type: text/plain; charset=utf-8\r\n
//	Connection: close\r\n
//	\r\n
//	<code> <text>[: <detail>]      (501: "Unsupported transfer encoding")
//
// Listener rewrites exactly those writes into the API's JSON error shape.

// cannedHeaders are the header lines of net/http's own error answers.
const cannedHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// Listener returns ln with its connections' answers that net/http writes
// itself in plain text turned into the JSON error shape every other answer
// has. Serve the API's http.Server on it.
func Listener(ln net.Listener) net.Listener { return jsonErrorListener{ln} }

type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &jsonErrorConn{Conn: c}, nil
}

// jsonErrorConn is a connection whose canned error answers are rewritten.
type jsonErrorConn struct{ net.Conn }

func (c *jsonErrorConn) Write(p []byte) (int, error) {
	out, ok := rewriteCanned(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite half-closes the connection when it can: net/http does so
// after its 431 answer, so that the client reads it before the close.
func (c *jsonErrorConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// rewriteCanned returns the JSON answer for p when p is one of net/http's
// own plain-text error answers, whole; ok is false for anything else.
func rewriteCanned(p []byte) (out []byte, ok bool) {
	rest, found := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !found {
		return nil, false
	}
	statusLine, body, found := bytes.Cut(rest, []byte(cannedHeaders))
	if !found || bytes.ContainsAny(statusLine, "\r\n") || len(statusLine) < 5 || statusLine[3] != ' ' {
		return nil, false
	}
	code, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	if !bytes.Equal(body, statusLine) && !(code == 501 && string(body) == "Unsupported transfer encoding") {
		return nil, false
	}
	text, detail, _ := strings.Cut(string(statusLine[4:]), ": ")

	var e errorDetail
	switch code {
	case 400:
		e = errorDetail{Code: sundial.EInvalid, Message: "malformed HTTP request"}
	case 431:
		e = errorDetail{Code: sundial.ETooLarge, Message: "the request's header fields are too large"}
	case 505:
		e = errorDetail{Code: sundial.EUnsupported, Message: "HTTP version not supported: send HTTP/1.1"}
	case 501:
		e = errorDetail{Code: sundial.EUnsupported, Message: "unsupported transfer encoding: send chunked or none"}
	default:
		e = errorDetail{Code: sundial.EInvalid, Message: strings.ToLower(text)}
	}
	if detail != "" {
		e.Message += ": " + detail
	}
	js := encodeJSON(errorBody{Error: e})
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + string(statusLine[:3]) + " " + text + "\r\n")
	b.WriteString("Content-Type: application/json\r\n")
	b.WriteString("X-Content-Type-Options: nosniff\r\n")
	b.WriteString("Connection: close\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(js)) + "\r\n\r\n")
	b.Write(js)
	return b.Bytes(), true
}

// LimitListener returns ln accepting at most n connections open at once:
// Accept waits while n are open, so the node keeps its file descriptors
// for its own work whatever clients do. n < 1 means no limit.
func LimitListener(ln net.Listener, n int) net.Listener {
	if n < 1 {
		return ln
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{} // one value per open connection
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn frees its slot once, on its first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection when it can, as net/http does
// after some of its own error answers.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
