package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// addOutputFlag adds -o/--output to cmd, with its default and the formats
// it takes (for the help and for completion).
func addOutputFlag(cmd *cobra.Command, p *string, def string, formats ...string) {
	cmd.Flags().StringVarP(p, "output", "o", def, "output format: "+strings.Join(formats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput refuses an output format the command does not take.
func checkOutput(got string, formats ...string) error {
	if slices.Contains(formats, got) {
		return nil
	}
	return usageErrorf("-o %q: want %s", got, strings.Join(formats, ", "))
}

// writeJSON writes v as indented JSON, without HTML escapes.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeYAMLValue writes v as YAML, by way of its JSON (so that the keys
// are the JSON names, in their order).
func writeYAMLValue(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeYAML(w, data)
}

// writeYAML writes JSON documents as a YAML stream, one document each
// ("---" between them), in block style, keys in the order the JSON has
// them: what apply reads back.
func writeYAML(w io.Writer, docs ...json.RawMessage) error {
	var b bytes.Buffer
	for i, doc := range docs {
		var n yaml.Node
		// JSON is YAML: the node keeps the keys' order.
		if err := yaml.Unmarshal(doc, &n); err != nil {
			return fmt.Errorf("writing YAML: %w", err)
		}
		blockStyle(&n)
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&n); err != nil {
			return fmt.Errorf("writing YAML: %w", err)
		}
		if err := enc.Close(); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// blockStyle drops the flow style and the quotes JSON's text gives the
// nodes, so that the encoder writes block YAML and quotes only what needs
// it.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// writeTable writes a table: a header, then the rows, in columns.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			// A tab or a line break would break the columns.
			cells[i] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// writeFields writes "Key: value" lines, the values aligned.
func writeFields(w io.Writer, fields [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, f := range fields {
		fmt.Fprintf(tw, "%s:\t%s\n", f[0], strings.ReplaceAll(f[1], "\n", " "))
	}
	return tw.Flush()
}

// dash is s, or "-" when it is empty: a table cell is never blank.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago says how long before now t was, or how long after: "12s ago",
// "in 4s", "now".
func ago(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d >= time.Second:
		return "in " + shortAge(d)
	case d <= -time.Second:
		return shortAge(-d) + " ago"
	}
	return "now"
}

// shortAge writes a duration of at least a second with its two largest
// units, rounded down: 4s, 3m10s, 2h5m, 3d4h, 400d.
func shortAge(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		if s%60 == 0 || s >= 600 {
			return fmt.Sprintf("%dm", s/60)
		}
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	case s < 86400:
		if (s/60)%60 == 0 {
			return fmt.Sprintf("%dh", s/3600)
		}
		return fmt.Sprintf("%dh%dm", s/3600, (s/60)%60)
	case s < 30*86400:
		if (s/3600)%24 == 0 {
			return fmt.Sprintf("%dd", s/86400)
		}
		return fmt.Sprintf("%dd%dh", s/86400, (s/3600)%24)
	}
	return fmt.Sprintf("%dd", s/86400)
}

// inZone writes t in the IANA zone tz (UTC if it is not one), to the
// second: 2026-05-04 12:00:05.
func inZone(t time.Time, tz string) string {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format(time.DateTime)
}

// runDuration writes a run's duration, rounded to what is readable.
func runDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
