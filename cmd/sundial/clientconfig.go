package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// The client commands find their server as kubectl does: named contexts,
// each a server and its token, in a file of the user's, one of them the
// current one. The file is YAML, read strictly, written with mode 0600 (it
// holds tokens):
//
//	current-context: prod
//	contexts:
//	  - name: prod
//	    server: https://sundial.example.com
//	    token: sdl_...
//	    ca-file: /etc/ssl/sundial-ca.pem

// clientConfig is the file of contexts.
type clientConfig struct {
	CurrentContext string          `yaml:"current-context,omitempty" json:"current-context,omitempty"`
	Contexts       []clientContext `yaml:"contexts" json:"contexts"`
}

// clientContext is one named server.
type clientContext struct {
	Name   string `yaml:"name" json:"name"`
	Server string `yaml:"server,omitempty" json:"server,omitempty"`
	Token  string `yaml:"token,omitempty" json:"token,omitempty"`
	CAFile string `yaml:"ca-file,omitempty" json:"ca-file,omitempty"`
}

// find returns the context named name, nil if there is none.
func (cc *clientConfig) find(name string) *clientContext {
	for i := range cc.Contexts {
		if cc.Contexts[i].Name == name {
			return &cc.Contexts[i]
		}
	}
	return nil
}

// clientConfigPath is the file of contexts: SUNDIAL_CLIENT_CONFIG, else
// sundial/config.yaml in the user's config directory ($XDG_CONFIG_HOME, or
// ~/.config, on Linux; see os.UserConfigDir).
func clientConfigPath(getenv func(string) string) (string, error) {
	if p := getenv("SUNDIAL_CLIENT_CONFIG"); p != "" {
		return p, nil
	}
	var dir string
	switch runtime.GOOS {
	case "windows", "darwin", "ios", "plan9":
		d, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("no config directory for the contexts file (set SUNDIAL_CLIENT_CONFIG): %w", err)
		}
		dir = d
	default:
		// os.UserConfigDir's rule, read through getenv.
		dir = getenv("XDG_CONFIG_HOME")
		if dir == "" || !filepath.IsAbs(dir) {
			home := getenv("HOME")
			if home == "" {
				return "", errors.New("no config directory for the contexts file: neither $XDG_CONFIG_HOME nor $HOME is set " +
					"(set SUNDIAL_CLIENT_CONFIG)")
			}
			dir = filepath.Join(home, ".config")
		}
	}
	return filepath.Join(dir, "sundial", "config.yaml"), nil
}

// readClientConfig reads the file of contexts; a file that does not exist
// is an empty one. It warns on stderr when other users may read a file
// that holds tokens.
func readClientConfig(path string, stderr io.Writer) (*clientConfig, error) {
	cc := &clientConfig{}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cc, nil
	}
	if err != nil {
		return nil, fmt.Errorf("contexts file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cc); err != nil && !errors.Is(err, io.EOF) {
		if te, ok := errors.AsType[*yaml.TypeError](err); ok {
			msgs := make([]string, len(te.Errors))
			for i, m := range te.Errors {
				msgs[i] = unknownField.ReplaceAllString(m, `unknown key "$1"`)
			}
			err = errors.New(strings.Join(msgs, "; "))
		}
		return nil, usageErrorf("contexts file %s: %v", path, err)
	}
	for i, c := range cc.Contexts {
		if c.Name == "" {
			return nil, usageErrorf("contexts file %s: context %d has no name", path, i+1)
		}
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 &&
		slices.ContainsFunc(cc.Contexts, func(c clientContext) bool { return c.Token != "" }) {
		fmt.Fprintf(stderr, "sundial: warning: %s holds API tokens and other users of this machine may read it: chmod 600 it\n", path)
	}
	return cc, nil
}

// write saves the file of contexts with mode 0600, in a directory made
// with mode 0700 if it does not exist, replacing it at once (a reader
// never sees half of it).
func (cc *clientConfig) write(path string) error {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	data := b.Bytes()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("contexts file: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("contexts file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is none
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("contexts file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("contexts file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("contexts file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("contexts file: %w", err)
	}
	return nil
}

// configCommand is "sundial config": the contexts.
func (c *cli) configCommand() *cobra.Command {
	cmd := groupCommand("config", "Manage the named servers (contexts) the client commands talk to",
		`The client commands talk to the server given by --server (or SUNDIAL_SERVER) with the token
given by --token (or SUNDIAL_TOKEN). Contexts name servers and their tokens, as kubectl's do:
set-context saves one, use-context makes it the current one, which the client commands use
when neither flag nor variable is set; --context NAME picks another for one command.

They are kept in sundial/config.yaml under the user's config directory ($XDG_CONFIG_HOME or
~/.config on Linux), or the file SUNDIAL_CLIENT_CONFIG names, with mode 0600.`)
	cmd.AddCommand(c.setContextCommand(), c.useContextCommand(), c.getContextsCommand(),
		c.currentContextCommand(), c.deleteContextCommand())
	return cmd
}

// loadContexts reads the file of contexts and returns it with its path.
func (c *cli) loadContexts() (*clientConfig, string, error) {
	path, err := clientConfigPath(c.getenv)
	if err != nil {
		return nil, "", err
	}
	cc, err := readClientConfig(path, c.stderr)
	return cc, path, err
}

func (c *cli) setContextCommand() *cobra.Command {
	var ctx clientContext
	var use bool
	cmd := &cobra.Command{
		Use:   "set-context NAME [--server URL] [--token TOKEN] [--ca-file FILE] [--use]",
		Short: "Create a context, or change the settings given of an existing one",
		Example: `  sundial config set-context prod --server https://sundial.example.com --token "$TOKEN" --use
  sundial config set-context prod --token ""     # forget its token`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cc, path, err := c.loadContexts()
			if err != nil {
				return err
			}
			name := args[0]
			if strings.TrimSpace(name) != name || name == "" {
				return usageErrorf("config set-context: %q: a context's name has no leading or trailing space", name)
			}
			if cmd.Flags().Changed("server") {
				if _, err := parseServer(ctx.Server); err != nil {
					return usageErrorf("config set-context: --server: %v", err)
				}
			}
			cur := cc.find(name)
			created := cur == nil
			if created {
				cc.Contexts = append(cc.Contexts, clientContext{Name: name})
				cur = &cc.Contexts[len(cc.Contexts)-1]
			}
			if cmd.Flags().Changed("server") {
				cur.Server = ctx.Server
			}
			if cmd.Flags().Changed("token") {
				cur.Token = ctx.Token
			}
			if cmd.Flags().Changed("ca-file") {
				cur.CAFile = ctx.CAFile
			}
			if use {
				cc.CurrentContext = name
			}
			if err := cc.write(path); err != nil {
				return err
			}
			what := "changed"
			if created {
				what = "created"
			}
			if use {
				what += ", and is the current context"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "context %q %s\n", name, what)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&ctx.Server, "server", "", "the server's URL, such as https://sundial.example.com")
	f.StringVar(&ctx.Token, "token", "", "the API token to send (\"\" for none)")
	f.StringVar(&ctx.CAFile, "ca-file", "", "PEM file of the CA certificates that sign the server's certificate")
	f.BoolVar(&use, "use", false, "make it the current context")
	return cmd
}

func (c *cli) useContextCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "use-context NAME",
		Short:             "Make a context the current one",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: c.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			cc, path, err := c.loadContexts()
			if err != nil {
				return err
			}
			if cc.find(args[0]) == nil {
				return usageErrorf("config use-context: no context named %q in %s%s", args[0], path, contextNames(cc))
			}
			cc.CurrentContext = args[0]
			if err := cc.write(path); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "current context is %q\n", args[0])
			return err
		},
	}
}

func (c *cli) getContextsCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts; tokens are shown as ***",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(out, "table", "json", "yaml", "name"); err != nil {
				return err
			}
			cc, _, err := c.loadContexts()
			if err != nil {
				return err
			}
			shown := *cc
			shown.Contexts = slices.Clone(cc.Contexts)
			for i := range shown.Contexts {
				if shown.Contexts[i].Token != "" {
					shown.Contexts[i].Token = "***"
				}
			}
			w := cmd.OutOrStdout()
			switch out {
			case "json":
				return writeJSON(w, shown)
			case "yaml":
				return writeYAMLValue(w, shown)
			case "name":
				for _, x := range shown.Contexts {
					fmt.Fprintln(w, x.Name)
				}
				return nil
			}
			rows := [][]string{}
			for _, x := range shown.Contexts {
				cur := ""
				if x.Name == cc.CurrentContext {
					cur = "*"
				}
				rows = append(rows, []string{cur, x.Name, dash(x.Server), dash(x.Token), dash(x.CAFile)})
			}
			return writeTable(w, []string{"CURRENT", "NAME", "SERVER", "TOKEN", "CA FILE"}, rows)
		},
	}
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml", "name")
	return cmd
}

func (c *cli) currentContextCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "current-context",
		Short: "Print the name of the current context",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cc, path, err := c.loadContexts()
			if err != nil {
				return err
			}
			if cc.CurrentContext == "" {
				return fmt.Errorf("no current context in %s: the client commands use --server, SUNDIAL_SERVER or %s",
					path, defaultServer)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), cc.CurrentContext)
			return err
		},
	}
}

func (c *cli) deleteContextCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "delete-context NAME",
		Short:             "Delete a context",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: c.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			cc, path, err := c.loadContexts()
			if err != nil {
				return err
			}
			i := slices.IndexFunc(cc.Contexts, func(x clientContext) bool { return x.Name == args[0] })
			if i < 0 {
				return usageErrorf("config delete-context: no context named %q in %s%s", args[0], path, contextNames(cc))
			}
			cc.Contexts = slices.Delete(cc.Contexts, i, i+1)
			if cc.CurrentContext == args[0] {
				cc.CurrentContext = ""
			}
			if err := cc.write(path); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "context %q deleted\n", args[0])
			return err
		},
	}
}

// contextNames lists the contexts there are, for an error message.
func contextNames(cc *clientConfig) string {
	if len(cc.Contexts) == 0 {
		return " (it has none: create one with sundial config set-context NAME --server URL)"
	}
	names := make([]string, len(cc.Contexts))
	for i, x := range cc.Contexts {
		names[i] = x.Name
	}
	return " (it has " + strings.Join(names, ", ") + ")"
}

// completeContexts completes a context's name.
func (c *cli) completeContexts(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cc, _, err := c.loadContexts()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, x := range cc.Contexts {
		if strings.HasPrefix(x.Name, toComplete) {
			out = append(out, cobra.CompletionWithDesc(x.Name, x.Server))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
