package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// cli is one invocation of the command line: what run was given, and the
// flags the client commands share (see clientFlags).
type cli struct {
	ctx            context.Context
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
	now            func() time.Time

	conn connFlags
}

// execute runs the command line args. The command tree is cobra's: it
// finds the command, parses the flags of the client commands, prints the
// help and answers shell completion ("sundial completion bash" writes the
// script). The
// commands that came before it (serve, migrate, secrets, target, cron,
// bench) keep their own parsing: their flags are the configuration layer's
// (flag, SUNDIAL_* environment, YAML file: see config.go), with Go's flag
// syntax (-tz as well as --tz) and their own help, which cobra passes
// them untouched; their flags are declared to cobra only for completion.
func (c *cli) execute(args []string) error {
	if len(args) == 0 {
		// cobra reads os.Args when given none.
		return usageErrorf("no command given; run 'sundial help' for usage")
	}
	switch args[0] {
	case "-help":
		args = append([]string{"help"}, args[1:]...)
	case "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	root := c.rootCommand()
	root.SetArgs(args)
	return root.ExecuteContext(c.ctx)
}

// rootCommand builds the whole command tree.
func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "sundial",
		Short:         "Sundial is a distributed second-precise job scheduler.",
		SilenceErrors: true, // main prints the error on one line
		SilenceUsage:  true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q; run 'sundial help' for usage", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			return usageErrorf("no command given; run 'sundial help' for usage")
		},
	}
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		path := cmd.CommandPath()
		return usageErrorf("%s: %v; run '%s -h' for the flags", strings.TrimPrefix(path, "sundial "), err, path)
	})
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root {
			_, _ = io.WriteString(cmd.OutOrStdout(), usage)
			return
		}
		cobraHelp(cmd, args)
	})
	root.AddCommand(c.serverCommands()...)
	root.AddCommand(c.clientCommands()...)
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and Go version",
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(version, bi))
			return err
		},
	})
	return root
}

// legacyCommand is a command that parses its own arguments, flags
// included, with fn; "-h" is its help.
func legacyCommand(use, short string, fn func(args []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:                use,
		Short:              short,
		DisableFlagParsing: true,
		RunE:               func(_ *cobra.Command, args []string) error { return fn(args) },
	}
	cmd.SetHelpFunc(func(*cobra.Command, []string) { _ = fn([]string{"-h"}) })
	return cmd
}

// serverCommands are the commands that run Sundial itself, or try it
// out: serve, migrate, backup, health, secrets, target, cron and bench.
func (c *cli) serverCommands() []*cobra.Command {
	ctx, getenv, stdout, stderr := c.ctx, c.getenv, c.stdout, c.stderr
	serve := legacyCommand("serve [flags]", "Run a scheduler node and the REST API", func(args []string) error {
		return runServe(ctx, args, getenv, stdout, stderr)
	})
	settingFlags(serve, "serve")
	migrate := legacyCommand("migrate [flags]", "Create or upgrade the database schema", func(args []string) error {
		return runMigrate(ctx, args, getenv, stdout, stderr)
	})
	settingFlags(migrate, "migrate")
	backup := legacyCommand("backup --to FILE [--force] [flags]", "Write a consistent copy of a running node's SQLite database",
		func(args []string) error { return runBackup(ctx, args, getenv, stdout, stderr) })
	settingFlags(backup, "backup")
	backup.Flags().String("to", "", "the file to write the copy to")
	backup.Flags().Bool("force", false, "replace the file if it exists")

	secrets := legacyCommand("secrets reseal [flags]", "Seal every stored secret again with the current secrets key",
		func(args []string) error { return runSecrets(ctx, args, getenv, stdout, stderr) })
	secrets.SetHelpFunc(func(*cobra.Command, []string) { _ = runSecrets(ctx, []string{"help"}, getenv, stdout, stderr) })
	reseal := legacyCommand("reseal [flags]", "Seal every stored secret again with the current secrets key, after a rotation",
		func(args []string) error { return runReseal(ctx, args, getenv, stdout, stderr) })
	settingFlags(reseal, "secrets reseal")
	secrets.AddCommand(reseal)

	health := legacyCommand("health [--url URL] [--ready]", "Exit 0 if a node answers /healthz (or /readyz) with 200: a container's health check",
		func(args []string) error { return runHealth(ctx, args, stdout, stderr) })
	health.Flags().String("url", "http://127.0.0.1:8080", "the node's API")
	health.Flags().Bool("ready", false, "ask /readyz rather than /healthz")
	health.Flags().String("timeout", "5s", "give up after this")

	target := legacyCommand("target [--listen ADDR]", "Run an HTTP target that prints every call it receives",
		func(args []string) error { return runTarget(ctx, args, stdout, stderr) })
	target.Flags().String("listen", "127.0.0.1:9000", "address to listen on")

	cronCmd := legacyCommand("cron next|explain", "Print the next fire times of a cron expression, or explain it",
		func(args []string) error { return runCron(args, stdout, stderr) })
	cronCmd.SetHelpFunc(func(*cobra.Command, []string) { _ = runCron([]string{"help"}, stdout, stderr) })
	next := legacyCommand("next [--tz ZONE] [--from RFC3339] [--count N] [--] EXPR", "Print the next fire times of EXPR",
		func(args []string) error { return runCronNext(args, stdout, stderr) })
	next.Flags().String("tz", "UTC", "evaluate and print in this IANA time zone")
	next.Flags().String("from", "", "print fire times after this RFC 3339 time (default now)")
	next.Flags().String("count", "5", "print this many fire times")
	explain := legacyCommand("explain [--] EXPR", "Describe EXPR in plain English",
		func(args []string) error { return runCronExplain(args, stdout, stderr) })
	cronCmd.AddCommand(next, explain)

	bench := legacyCommand("bench precision|throughput|scale|failover [flags]", "Measure Sundial on nodes started for the purpose",
		func(args []string) error { return runBench(ctx, args, stdout, stderr) })
	bench.SetHelpFunc(func(*cobra.Command, []string) { fmt.Fprintf(stdout, "usage:\n  %s\n", benchUsage) })
	for _, s := range []struct{ name, short string }{
		{"precision", "Measure fire lag on nodes started for the purpose"},
		{"throughput", "Measure how fast such nodes deliver one-off tasks all due at once"},
		{"scale", "Measure start-up, memory and idle CPU with a million tasks stored"},
		{"failover", "Kill cluster nodes at random and count lost and repeated fires"},
	} {
		bench.AddCommand(legacyCommand(s.name+" [flags]", s.short, func(args []string) error {
			return runBench(ctx, append([]string{s.name}, args...), stdout, stderr)
		}))
	}
	return []*cobra.Command{serve, migrate, backup, health, secrets, target, cronCmd, bench}
}

// settingFlags declares to cobra, for shell completion only, the flags of
// the configuration layer that the command takes (its parsing is
// loadConfig's).
func settingFlags(cmd *cobra.Command, name string) {
	cmd.Flags().String("config", "", "YAML configuration file (env SUNDIAL_CONFIG)")
	for _, s := range defaultConfig().commandSettings(name) {
		cmd.Flags().String(s.key, s.text(), s.help)
	}
}
