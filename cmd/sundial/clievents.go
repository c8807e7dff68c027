package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sundialhq/sundial"
)

// The client of the live events (GET /api/v1/events): run tail prints the
// outcomes of runs as they come, task ls --watch prints the tasks again
// when they change. Both follow the stream through reconnects.

// Bounds of a followed stream.
const (
	// streamIdle is how long a stream may send nothing, not even its
	// keep-alive (every 15 s), before the client takes it for dead and
	// reconnects.
	streamIdle = 45 * time.Second
	// reconnectMax bounds the wait between two reconnects.
	reconnectMax = 10 * time.Second
	// maxFrameLine bounds a line of the stream.
	maxFrameLine = 1 << 20
	// seenIDs is how many ids of recent events a follower remembers, to
	// leave out the ones a resume sends again.
	seenIDs = 4096
)

// streamFrame is one event of a stream: its id, its event name (its kind,
// or "reset") and its data.
type streamFrame struct {
	id, event string
	data      []byte
}

// follow reads the events of GET /api/v1/events with the query q and hands
// each to on, until ctx is done (then it returns nil) or on fails. When the
// stream breaks it says so on stderr and reconnects, resuming after the
// last event it had (Last-Event-ID; before the first, since the time it
// first connected), each event handed on once. A refused request (a
// filter the API refuses, a missing token) is an error, as is a server
// that cannot be reached at first. connected, if not nil, is called each
// time the stream (re)opens.
func (a *apiClient) follow(ctx context.Context, q url.Values, stderr io.Writer, connected func(), on func(streamFrame) error) error {
	stream := &http.Client{Transport: a.http.Transport} // no timeout: the stream stays open
	var (
		lastID string
		since  time.Time // when it first connected: where a resume without an event starts
		seen   = map[string]bool{}
		order  []string
	)
	wait := time.Second
	for {
		opened := func() {
			if since.IsZero() {
				since = time.Now().UTC()
			}
			wait = time.Second
			if connected != nil {
				connected()
			}
		}
		err := a.readStream(ctx, stream, q, lastID, since, opened, func(f streamFrame) error {
			if f.id != "" {
				if seen[f.id] {
					return nil
				}
				seen[f.id], lastID = true, f.id
				if order = append(order, f.id); len(order) > seenIDs {
					delete(seen, order[0])
					order = order[1:]
				}
			}
			return on(f)
		})
		if ctx.Err() != nil {
			return nil
		}
		var fatal *onError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		remote, isRemote := errors.AsType[*remoteError](err)
		switch {
		case isRemote && remote.Status != http.StatusServiceUnavailable && remote.Status != http.StatusTooManyRequests:
			return err // refused: trying again changes nothing
		case since.IsZero() && !isRemote:
			return err // never reached
		}
		fmt.Fprintf(stderr, "sundial: the event stream broke (%s); reconnecting in %s\n", oneLine(err.Error()), wait)
		if err := sleep(ctx, wait); err != nil {
			return nil
		}
		wait = min(2*wait, reconnectMax)
	}
}

// onError is the error of follow's on, which ends it.
type onError struct{ err error }

func (e *onError) Error() string { return e.err.Error() }

// readStream opens the stream once and hands its frames to on until it
// ends; the error says why it did.
func (a *apiClient) readStream(ctx context.Context, client *http.Client, q url.Values, lastID string, since time.Time,
	connected func(), on func(streamFrame) error) error {
	q = cloneValues(q)
	if lastID == "" && !since.IsZero() {
		q.Set("since", since.Format(time.RFC3339Nano))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url("/api/v1/events", q), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", "sundial-cli/"+cliVersion())
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return a.connError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, clientMaxAnswer))
		return answerError(resp, body, http.MethodGet, "/api/v1/events")
	}
	connected()
	// A stream that says nothing for streamIdle is dead: closing its body
	// ends the read.
	idle := time.AfterFunc(streamIdle, cancel)
	defer idle.Stop()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxFrameLine)
	var f streamFrame
	for sc.Scan() {
		idle.Reset(streamIdle)
		line := sc.Text()
		switch {
		case line == "":
			if f.data != nil {
				if err := on(f); err != nil {
					return &onError{err}
				}
			}
			f = streamFrame{}
		case strings.HasPrefix(line, ":"):
		default:
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "id":
				f.id = value
			case "event":
				f.event = value
			case "data":
				f.data = append(f.data, value...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF // the server ended the stream (it stops)
}

// streamQuery is the query of a stream of the events of tasks (each
// resolved to its id: a name that names no task is an error), of kinds,
// of the tasks selector matches.
func streamQuery(ctx context.Context, a *apiClient, tasks []string, kinds, selector string) (url.Values, error) {
	q := url.Values{}
	for _, ref := range tasks {
		id, err := taskID(ctx, a, ref)
		if err != nil {
			return nil, err
		}
		q.Add("task", strconv.FormatInt(id, 10))
	}
	if kinds != "" {
		q.Set("kinds", kinds)
	}
	if selector != "" {
		q.Set("selector", selector)
	}
	return q, nil
}

// colorOn reports whether w takes color: a terminal, with NO_COLOR unset
// and TERM not dumb.
func (c *cli) colorOn(w io.Writer) bool {
	if c.getenv("NO_COLOR") != "" || c.getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ANSI colors of the statuses.
const (
	colorReset  = "\x1b[0m"
	colorRed    = "\x1b[31m"
	colorGreen  = "\x1b[32m"
	colorYellow = "\x1b[33m"
	colorDim    = "\x1b[2m"
)

// statusColor is the color of an outcome: green for a success, red for a
// failure, yellow for what is neither (a skip, a cancel, a retry, an
// interruption).
func statusColor(status sundial.RunStatus, kind sundial.EventKind) string {
	switch {
	case kind == sundial.EventRunRetrying || kind == sundial.EventRunInterrupted:
		return colorYellow
	case status == sundial.RunSuccess:
		return colorGreen
	case status == sundial.RunFailed, status == sundial.RunTimeout, status == sundial.RunFailedTimeout:
		return colorRed
	}
	return colorYellow
}

// tailKinds are the events run tail prints: the outcomes of deliveries.
const tailKinds = "run.finished,run.retrying,run.interrupted"

func (c *cli) runTailCommand() *cobra.Command {
	var tasks []string
	var selector, out string
	var all bool
	cmd := &cobra.Command{
		Use:   "tail [--task NAME|ID]... [-o text|json]",
		Short: "Follow the runs of the cluster: one line per outcome, as it comes",
		Long: `Follow the live events of the cluster (GET /api/v1/events) and print one line per outcome
of a run, as it happens on any node: its time, task, run, status, how late it started (LAG)
and how long its call took, and the HTTP status and error of a failure. A failed delivery
that is retried, and one cut off by a node's stop, are printed too (RETRYING, INTERRUPTED).
--all prints every change of a run (planned, queued, started, waiting for a callback).

On a terminal the statuses are in color (not with NO_COLOR set). When the stream breaks
(a node stops, the network fails), tail says so on stderr, reconnects and resumes after
the last event it printed; if events were missed meanwhile it says so. Ctrl-C ends it.

-o json prints each event as the API sends it, one JSON object a line.`,
		Example: `  sundial run tail
  sundial run tail --task nightly-report --task 7
  sundial run tail -o json | jq -r 'select(.run.status == "FAILED") | .task.name'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "text", "json"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			kinds := tailKinds
			if all {
				kinds = "run"
			}
			q, err := streamQuery(cmd.Context(), a, tasks, kinds, selector)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			color := out == "text" && c.colorOn(w)
			return a.follow(cmd.Context(), q, c.stderr, nil, func(f streamFrame) error {
				if f.event == "reset" {
					var r struct{ Message string }
					_ = json.Unmarshal(f.data, &r)
					fmt.Fprintf(c.stderr, "sundial: events were missed: %s\n", r.Message)
					return nil
				}
				if out == "json" {
					_, err := fmt.Fprintf(w, "%s\n", f.data)
					return err
				}
				var e sundial.Event
				if err := json.Unmarshal(f.data, &e); err != nil || e.Run == nil {
					return nil // not a run's event: not this command's
				}
				_, err := fmt.Fprintln(w, tailLine(e, color))
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&tasks, "task", nil, "only the runs of this task (a name or an id); repeat it for several")
	f.StringVarP(&selector, "selector", "l", "", "only the runs of the tasks whose labels match this label selector: team=payments")
	f.BoolVar(&all, "all", false, "print every change of a run, not only its outcomes")
	addOutputFlag(cmd, &out, "text", "text", "json")
	_ = cmd.RegisterFlagCompletionFunc("task", c.completeTasks)
	return cmd
}

// tailLine is the line of run tail for a run's event:
//
//	2026-05-04 03:00:01.004  nightly-report  run/1811  FAILED  lag 12ms  took 91ms  HTTP 503: HTTP 503 Service Unavailable
func tailLine(e sundial.Event, color bool) string {
	r := e.Run
	at := e.At
	if r.FinishedAt != nil && e.Kind == sundial.EventRunFinished {
		at = *r.FinishedAt
	}
	status := string(r.Status)
	switch e.Kind {
	case sundial.EventRunRetrying:
		status = "RETRYING"
	case sundial.EventRunFinished, sundial.EventRunInterrupted:
	default:
		status = strings.TrimPrefix(string(e.Kind), "run.")
		status = strings.ToUpper(status)
	}
	if r.SkipReason != "" {
		status += " (" + string(r.SkipReason) + ")"
	}
	if color {
		status = statusColor(r.Status, e.Kind) + status + colorReset
	}
	task := e.Task.Name
	if task == "" {
		task = "task/" + strconv.FormatInt(e.Task.ID, 10)
	}
	parts := []string{at.Local().Format("2006-01-02 15:04:05.000"), task, "run/" + strconv.FormatInt(r.ID, 10), status}
	if r.StartedAt != nil && r.Trigger != sundial.TriggerManual && r.Trigger != sundial.TriggerBackfill && (r.Delivery <= 1) {
		parts = append(parts, "lag "+runDuration(r.StartedAt.Sub(r.ScheduledTime)))
	}
	if r.StartedAt != nil && r.FinishedAt != nil {
		parts = append(parts, "took "+runDuration(r.FinishedAt.Sub(*r.StartedAt)))
	}
	if r.Delivery > 1 {
		parts = append(parts, "delivery "+strconv.Itoa(r.Delivery))
	}
	if r.MissedCount > 0 {
		parts = append(parts, strconv.Itoa(r.MissedCount)+" missed")
	}
	var detail string
	if r.HTTPStatus != 0 && (r.Error != "" || r.Status != sundial.RunSuccess) {
		detail = "HTTP " + strconv.Itoa(r.HTTPStatus)
	}
	if r.Error != "" {
		if detail != "" {
			detail += ": "
		}
		detail += oneLine(r.Error)
	}
	if r.DueAt != nil && e.Kind == sundial.EventRunRetrying {
		if detail != "" {
			detail += "; "
		}
		detail += "next delivery " + r.DueAt.Local().Format("15:04:05.000")
	}
	if detail != "" {
		if color {
			detail = colorDim + detail + colorReset
		}
		parts = append(parts, detail)
	}
	return strings.Join(parts, "  ")
}

// watchDebounce is how long task ls --watch waits after a change for more
// before it prints the table again: a burst of changes prints it once.
const watchDebounce = 500 * time.Millisecond

// watchTasks prints the tasks again (list) after every change of a task or
// a run the event stream tells of, a burst of them once, until Ctrl-C: on
// a terminal over the table before, otherwise after it. A list that fails
// is said on stderr, and the next change tries again.
func (c *cli) watchTasks(cmd *cobra.Command, a *apiClient, list func() error) error {
	ctx := cmd.Context()
	w := cmd.OutOrStdout()
	tty := c.colorOn(w)
	changed := make(chan struct{}, 1)
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	opened := 0
	done := make(chan error, 1)
	go func() {
		done <- a.follow(ctx, url.Values{"kinds": {"task,run"}}, c.stderr, func() {
			if opened++; opened > 1 {
				signal() // changes may have come while it was away
			}
		}, func(streamFrame) error {
			signal()
			return nil
		})
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			return err
		case <-changed:
		}
		// Let the burst end (at most a second).
		quiet, limit := time.NewTimer(watchDebounce), time.After(time.Second)
	burst:
		for {
			select {
			case <-changed:
				quiet.Reset(watchDebounce)
			case <-quiet.C:
				break burst
			case <-limit:
				break burst
			case <-ctx.Done():
				quiet.Stop()
				return nil
			}
		}
		quiet.Stop()
		if tty {
			fmt.Fprint(w, "\x1b[H\x1b[2J")
		} else {
			fmt.Fprintln(w)
		}
		if err := list(); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(c.stderr, "sundial: listing the tasks again: %s\n", oneLine(err.Error()))
		}
	}
}
