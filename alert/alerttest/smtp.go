// Package alerttest holds what tests of alerts need: an SMTP sink that
// records the mails it takes, on a loopback port.
package alerttest

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"net"
	"strings"
	"sync"
	"testing"
)

// Mail is a mail the sink took.
type Mail struct {
	From string
	To   []string
	Data string // headers and body, CRLF lines, dot-unstuffed
	User string // the AUTH PLAIN user; "" without AUTH
	TLS  bool   // STARTTLS was done before MAIL
}

// SMTPSink is a line-based SMTP server on 127.0.0.1 that speaks EHLO,
// STARTTLS (when it has a certificate), AUTH PLAIN, MAIL, RCPT, DATA,
// RSET, NOOP and QUIT, and records every mail.
type SMTPSink struct {
	Addr string
	// User and Password, when set, are the only credentials AUTH takes.
	User, Password string

	ln  net.Listener
	tls *tls.Config

	mu    sync.Mutex
	mails []Mail
	got   chan struct{}
	// Refuse, when set, makes DATA answer 451 (a failing server).
	refuse bool
}

// NewSMTPSink starts a sink, closed when t ends; tlsCfg, when set, lets
// it offer STARTTLS.
func NewSMTPSink(t testing.TB, tlsCfg *tls.Config) *SMTPSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &SMTPSink{Addr: ln.Addr().String(), ln: ln, tls: tlsCfg, got: make(chan struct{}, 1000)}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

// Port is the sink's port.
func (s *SMTPSink) Port() string {
	_, p, _ := net.SplitHostPort(s.Addr)
	return p
}

// Mails returns the mails taken so far.
func (s *SMTPSink) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

// Got is signalled once per mail taken.
func (s *SMTPSink) Got() <-chan struct{} { return s.got }

// Refuse makes the sink refuse (on) or take (off) the mails that come.
func (s *SMTPSink) Refuse(on bool) {
	s.mu.Lock()
	s.refuse = on
	s.mu.Unlock()
}

func (s *SMTPSink) serve(c net.Conn) {
	defer func() { c.Close() }()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	say := func(lines ...string) bool {
		for _, l := range lines {
			_, _ = w.WriteString(l + "\r\n")
		}
		return w.Flush() == nil
	}
	if !say("220 sink ESMTP") {
		return
	}
	var m Mail
	secure := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			ext := []string{"250-sink", "250-8BITMIME"}
			if s.tls != nil && !secure {
				ext = append(ext, "250-STARTTLS")
			}
			say(append(ext, "250 AUTH PLAIN")...)
		case "STARTTLS":
			if s.tls == nil || secure {
				say("454 no TLS")
				continue
			}
			say("220 go ahead")
			tc := tls.Server(c, s.tls)
			if tc.Handshake() != nil {
				return
			}
			c, secure = tc, true
			r, w = bufio.NewReader(c), bufio.NewWriter(c)
			m = Mail{}
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			if !strings.EqualFold(mech, "PLAIN") {
				say("504 only PLAIN")
				continue
			}
			if resp == "" {
				say("334 ")
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				resp = strings.TrimSpace(l)
			}
			raw, err := base64.StdEncoding.DecodeString(resp)
			parts := strings.Split(string(raw), "\x00")
			if err != nil || len(parts) != 3 || (s.User != "" && (parts[1] != s.User || parts[2] != s.Password)) {
				say("535 authentication failed")
				continue
			}
			m.User = parts[1]
			say("235 ok")
		case "MAIL":
			m.From, m.To, m.TLS = addrOf(arg), nil, secure
			say("250 ok")
		case "RCPT":
			m.To = append(m.To, addrOf(arg))
			say("250 ok")
		case "DATA":
			say("354 end with .")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			s.mu.Lock()
			refuse := s.refuse
			if !refuse {
				m.Data = b.String()
				s.mails = append(s.mails, m)
			}
			s.mu.Unlock()
			if refuse {
				say("451 try again later")
				continue
			}
			s.got <- struct{}{}
			say("250 queued")
			m = Mail{User: m.User}
		case "RSET":
			m = Mail{User: m.User}
			say("250 ok")
		case "NOOP":
			say("250 ok")
		case "QUIT":
			say("221 bye")
			return
		default:
			say("502 unknown command")
		}
	}
}

// addrOf is the address of "FROM:<a@b>" or "TO:<a@b>".
func addrOf(arg string) string {
	_, v, _ := strings.Cut(arg, ":")
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, ' '); i >= 0 {
		v = v[:i]
	}
	return strings.Trim(v, "<>")
}
