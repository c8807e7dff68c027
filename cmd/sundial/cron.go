package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sundialhq/sundial/cron"
)

const (
	cronNextUsage    = `sundial cron next [--tz ZONE] [--from RFC3339] [--count N] [--] EXPR`
	cronExplainUsage = `sundial cron explain [--] EXPR`
	maxCronCount     = 1000
)

// runCron dispatches "sundial cron next" and "sundial cron explain".
func runCron(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErrorf("cron: missing subcommand (usage: %s | %s)", cronNextUsage, cronExplainUsage)
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "next":
		return runCronNext(rest, stdout, stderr)
	case "explain":
		return runCronExplain(rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		_, err := fmt.Fprintf(stdout, "usage:\n  %s\n  %s\n", cronNextUsage, cronExplainUsage)
		return err
	default:
		return usageErrorf("cron: unknown subcommand %q (usage: %s | %s)", sub, cronNextUsage, cronExplainUsage)
	}
}

// runCronNext prints the next fire times of an expression, one RFC 3339
// time with offset per line, in the chosen zone.
func runCronNext(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cron next")
	tz := fs.String("tz", "UTC", "evaluate and print in the IANA time zone `ZONE`")
	from := fs.String("from", "", "print fire times after `RFC3339` (default now)")
	count := fs.String("count", "5", "print `N` fire times, 1 to "+strconv.Itoa(maxCronCount))
	expr, err := parseArgs(fs, args, cronNextUsage, stderr)
	if err != nil || expr == nil { // expr is nil after -h
		return err
	}

	sched, err := parseExpr(*expr)
	if err != nil {
		return err
	}
	loc, err := time.LoadLocation(*tz)
	if err != nil {
		return usageErrorf("invalid --tz %q: not a known IANA time zone (for example Europe/Paris)", *tz)
	}
	start := time.Now()
	if *from != "" {
		start, err = time.Parse(time.RFC3339, *from)
		if err != nil {
			return usageErrorf("invalid --from %q: want an RFC 3339 time (for example 2026-01-01T00:00:00Z)", *from)
		}
	}
	n, err := strconv.Atoi(*count)
	if err != nil || n < 1 || n > maxCronCount {
		return usageErrorf("invalid --count %q: want an integer from 1 to %d", *count, maxCronCount)
	}

	out := bufio.NewWriter(stdout)
	t := start.In(loc)
	for range n {
		if t = sched.Next(t); t.IsZero() {
			break // the schedule has no more fires
		}
		// A write error sticks to the writer: Flush reports it.
		_, _ = out.WriteString(t.In(loc).Format(time.RFC3339Nano))
		_ = out.WriteByte('\n')
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// runCronExplain prints what an expression means, on one line.
func runCronExplain(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cron explain")
	expr, err := parseArgs(fs, args, cronExplainUsage, stderr)
	if err != nil || expr == nil {
		return err
	}
	sched, err := parseExpr(*expr)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, sched.Explain()); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// newFlagSet returns a flag set that prints nothing by itself: parseArgs
// reports its errors on one line and prints the help for -h.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseArgs parses the flags and the single EXPR argument. For -h it prints
// the help on stderr and returns a nil expression and a nil error.
func parseArgs(fs *flag.FlagSet, args []string, usage string, stderr io.Writer) (*string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "usage: %s\n", usage)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return nil, nil
		}
		return nil, usageErrorf("%s: %v (usage: %s)", fs.Name(), err, usage)
	}
	if fs.NArg() != 1 {
		return nil, usageErrorf("%s: want exactly one EXPR argument, got %d; quote the expression and put flags before it (usage: %s)",
			fs.Name(), fs.NArg(), usage)
	}
	expr := fs.Arg(0)
	return &expr, nil
}

// parseExpr parses a cron expression; an invalid one is a usage error.
func parseExpr(expr string) (*cron.Schedule, error) {
	sched, err := cron.Parse(expr)
	if err != nil {
		if pe, ok := errors.AsType[*cron.ParseError](err); ok {
			return nil, usageErrorf("invalid cron expression: %s %q: %s", pe.Field, pe.Token, pe.Reason)
		}
		return nil, usageErrorf("invalid cron expression %q: %v", expr, err)
	}
	return sched, nil
}
