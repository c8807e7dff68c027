// Command sundial is Sundial's single binary. It owns the command line: it
// reads flags and the environment, wires the packages together and maps
// failures to exit statuses. Its commands run Sundial, or talk to a running
// Sundial through the REST API:
//
//	sundial serve            run a scheduler node and the REST API
//	sundial migrate          create or upgrade the database schema
//	sundial backup --to FILE copy a running node's SQLite database
//	sundial health           exit 0 if a node answers /healthz (or /readyz)
//	sundial secrets reseal   seal every stored secret again with the current secrets key
//	sundial target           an HTTP target that prints what it receives
//	sundial cron next EXPR   print the next fire times of a cron expression
//	sundial cron explain EXPR
//	sundial bench precision|throughput|scale|failover [flags]
//	sundial task ls|get|create|delete|enable|disable|trigger|upcoming|history
//	sundial run ls|get|cancel
//	sundial apply -f FILE|DIR, sundial diff -f FILE|DIR
//	sundial node ls, sundial token ls|create|revoke, sundial audit ls
//	sundial config use-context|set-context|get-contexts|current-context|delete-context
//	sundial completion bash|zsh|fish|powershell
//	sundial version
//
// A failure prints one line, "sundial: <message>", on stderr and exits with
// status 2 for a usage mistake or invalid input, 1 for anything else; diff
// exits 3, silently, when it finds a difference.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
)

// version is the release, set with -ldflags "-X main.version=v1.2.3"; when
// unset it comes from the module's build information (see versionLine).
var version = ""

const usage = `Sundial is a distributed second-precise job scheduler.

Usage:
  sundial serve [flags]                 run a scheduler node and the REST API
  sundial migrate [flags]               create or upgrade the database schema
  sundial backup --to FILE [--force]    write a consistent copy of a running node's SQLite database
  sundial health [--url URL] [--ready]  exit 0 if a node answers /healthz (or /readyz) with 200
  sundial secrets reseal [flags]        seal every stored secret again with secrets.key, after a
                                        rotation of the key, so that the old one can be dropped
  sundial target [--listen ADDR]        run an HTTP target that prints every call it receives
                                        (default 127.0.0.1:9000; ?status=503&delay=2s to fail or wait)
  sundial cron next [--tz ZONE] [--from RFC3339] [--count N] [--] EXPR
                                        print the next fire times of EXPR
  sundial cron explain EXPR             describe EXPR in plain English
  sundial bench precision [flags]       measure fire lag on nodes started for the purpose
  sundial bench throughput [flags]      measure how fast such nodes deliver one-off tasks all due at once
  sundial bench scale [flags]           measure start-up, memory and idle CPU with a million tasks stored
  sundial bench failover [flags]        kill cluster nodes at random and count lost and repeated fires
  sundial version                       print the version, VCS revision and Go version
  sundial help [COMMAND]                print this help, or a command's
  sundial completion bash|zsh|fish|powershell
                                        print a shell completion script

Talking to a running Sundial (--server, --token or a context say which one):
  sundial task ls|get|create|patch|edit|delete|enable|disable|trigger|upcoming|history
                                        list, read, change and run tasks, named by name or id
  sundial run ls|get|cancel             list, read and cancel runs
  sundial apply -f FILE|DIR [--dry-run] create the tasks declared in YAML files, update those that differ
  sundial diff -f FILE|DIR              print what apply would change, field by field (exit 3 if any)
  sundial node ls                       list the nodes of the cluster
  sundial token ls|create|revoke        manage API tokens
  sundial audit ls                      read the audit log
  sundial config set-context|use-context|get-contexts|current-context|delete-context
                                        named servers and their tokens, kept in the user's config directory

Quote EXPR so that it is one argument: sundial cron next "*/15 * * * * *".
Run "sundial <command> -h" for the flags of a command.
`

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// A third signal kills the process: after the second, the default
	// handling is back.
	ctx, stop := stopOnSignals(context.Background(), sigs, func() { signal.Reset(os.Interrupt, syscall.SIGTERM) })
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !quiet(err) {
			fmt.Fprintln(os.Stderr, "sundial: "+oneLine(err.Error()))
		}
		os.Exit(exitCode(err))
	}
}

// stopOnSignals returns a context cancelled by the first signal on sigs
// (SIGINT or SIGTERM: stop gracefully) that carries a second stop (see
// secondStop), closed by the next signal: stop at once. onSecond, if not
// nil, is called after the second signal. stop cancels the context and
// ends the watch.
func stopOnSignals(parent context.Context, sigs <-chan os.Signal, onSecond func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	again, quit := make(chan struct{}), make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-quit:
			return
		}
		select {
		case <-sigs:
			close(again)
			if onSecond != nil {
				onSecond()
			}
		case <-quit:
		}
	}()
	var once sync.Once
	return withSecondStop(ctx, again), func() { cancel(); once.Do(func() { close(quit) }) }
}

type secondStopKey struct{}

// withSecondStop returns ctx carrying a second stop: a channel closed when
// the process is asked to stop again while it is stopping, so that it
// stops at once (see runServe).
func withSecondStop(ctx context.Context, second <-chan struct{}) context.Context {
	return context.WithValue(ctx, secondStopKey{}, second)
}

// secondStop returns the second stop ctx carries; nil (never closed) when
// it carries none.
func secondStop(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(secondStopKey{}).(<-chan struct{})
	return ch
}

// exitError carries the exit status of a failure: 2 for a usage mistake or
// invalid input, 1 for anything else; 3 for diff's finding. A quiet one
// has said what it had to say already: main prints no line for it.
type exitError struct {
	code  int
	err   error
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf returns an error that exits with status 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// exitCode returns the exit status for err: the code of an *exitError in
// its chain, or 1.
func exitCode(err error) int {
	if e, ok := errors.AsType[*exitError](err); ok {
		return e.code
	}
	return 1
}

// quiet reports whether err is an *exitError that main does not print.
func quiet(err error) bool {
	e, ok := errors.AsType[*exitError](err)
	return ok && e.quiet
}

// oneLine folds a message onto a single line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// run is the whole program, minus process exit, so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := &cli{ctx: ctx, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now}
	return c.execute(args)
}

// versionLine describes the build: the release (the -ldflags version, else
// the module's version, else "devel"), then what the build information
// says of its source: the VCS revision (short), its commit time, whether
// the tree had changes, and the Go version.
//
//	sundial v1.2.0 (revision 1a2b3c4d5e6f, 2026-05-04T10:00:00Z, modified, go1.26.1)
func versionLine(ldflags string, bi *debug.BuildInfo) string {
	v := ldflags
	if v == "" && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "devel"
	}
	if bi == nil {
		return "sundial " + v
	}
	var details []string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev := s.Value
			if len(rev) > 12 {
				rev = rev[:12]
			}
			details = append(details, "revision "+rev)
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" {
			details = append(details, s.Value)
		}
	}
	if modified {
		details = append(details, "modified")
	}
	if bi.GoVersion != "" {
		details = append(details, bi.GoVersion)
	}
	if len(details) == 0 {
		return "sundial " + v
	}
	return "sundial " + v + " (" + strings.Join(details, ", ") + ")"
}
