package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

const healthUsage = `Usage: sundial health [--url URL] [--ready] [--timeout D]

Ask a running node whether it is up (GET /healthz) or, with --ready, ready to
take work (GET /readyz: its database answers and its scheduler runs), and
exit 0 if it answers 200, 1 otherwise: the health check of a container image
that has no curl (the Dockerfile's HEALTHCHECK).

Flags:
  --url string
        the node's API (default http://127.0.0.1:8080)
  --ready
        ask /readyz rather than /healthz
  --timeout duration
        give up after this (default 5s)
`

// runHealth asks a node's /healthz or /readyz and fails unless it answers
// 200.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sundial health", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	base := fs.String("url", "http://127.0.0.1:8080", "")
	ready := fs.Bool("ready", false, "")
	timeout := fs.Duration("timeout", 5*time.Second, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, err := io.WriteString(stderr, healthUsage)
			return err
		}
		return usageErrorf("health: %v; run 'sundial health -h' for the flags", err)
	}
	if fs.NArg() > 0 {
		return usageErrorf("health: unexpected argument %q", fs.Arg(0))
	}
	u, err := url.Parse(*base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("health: --url %q: want the node's API, such as http://127.0.0.1:8080", *base)
	}
	if *timeout <= 0 {
		return usageErrorf("health: --timeout %s: want a positive duration", *timeout)
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	u = u.JoinPath(path)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s: %s %s", u, resp.Status, body)
	}
	_, err = fmt.Fprintf(stdout, "%s: %s", u, body)
	return err
}
