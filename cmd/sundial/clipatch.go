package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/sundialhq/sundial"
)

// "task patch" and "task edit" change some fields of a task with a JSON
// merge patch (PATCH /api/v1/tasks/{id}, RFC 7396): the fields given
// change, null removes one (it takes its default), the others stay.

// mergePatchType is the media type of a JSON merge patch.
const mergePatchType = "application/merge-patch+json"

func (c *cli) taskPatchCommand() *cobra.Command {
	var patch, out string
	var sets []string
	cmd := &cobra.Command{
		Use:   "patch NAME|ID (-p JSON|@FILE | --set FIELD=VALUE...)",
		Short: "Change some fields of a task; the others stay as they are",
		Long: `Change the fields of a task that a JSON merge patch (RFC 7396) gives, and no other
(PATCH /api/v1/tasks/{id}). -p gives the patch: a JSON object, or @FILE holding one (in
JSON or YAML). --set FIELD=VALUE sets one field (repeatable); a dotted FIELD reaches into an
object (headers.X-Team, retry_policy.max_attempts, params.day). A VALUE is JSON where the
field is not a string (5, true, ["5xx"], {"a": 1}); null removes the field, which then takes
its default (a header: it is removed). Both may be given: --set applies over -p.

The patched task is checked as a whole, as apply's are; secrets the patch does not give
keep their stored values. It prints the fields that changed.`,
		Example: `  sundial task patch nightly-report --set cron_expr="0 30 4 * * *" --set retry_policy.max_attempts=5
  sundial task patch nightly-report --set headers.X-Env=null
  sundial task patch nightly-report -p '{"description": "Sends the nightly report", "priority": 10}'
  sundial task patch nightly-report -p @patch.yaml`,
		Args:              exactArgs(1, "the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			body, err := buildPatch(patch, sets)
			if err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			it, err := resolveTask(cmd.Context(), a, args[0])
			if err != nil {
				return err
			}
			after, err := sendPatch(cmd.Context(), a, it.t.ID, body, "")
			if err != nil {
				return err
			}
			return c.printPatched(cmd, out, "patched", it, after)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&patch, "patch", "p", "", "the patch: a JSON object, or @FILE holding one (JSON or YAML)")
	f.StringArrayVar(&sets, "set", nil, "FIELD=VALUE: set one field (repeatable); VALUE null removes it")
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}

// buildPatch makes the patch of -p and --set.
func buildPatch(patch string, sets []string) (map[string]any, error) {
	if patch == "" && len(sets) == 0 {
		return nil, usageErrorf("task patch: give the fields to change with -p JSON|@FILE or --set FIELD=VALUE")
	}
	p := map[string]any{}
	if patch != "" {
		data, where := []byte(patch), "-p"
		if name, ok := strings.CutPrefix(patch, "@"); ok {
			var err error
			if data, err = os.ReadFile(name); err != nil {
				return nil, usageErrorf("-p: %v", err)
			}
			where = name
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil { // JSON is YAML
			return nil, usageErrorf("%s: not JSON or YAML: %v", where, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		jv, err := jsonValue(v, "")
		if err != nil {
			return nil, usageErrorf("%s: %v", where, err)
		}
		obj, ok := jv.(map[string]any)
		if !ok {
			return nil, usageErrorf("%s: a patch is an object of the fields to change, such as {\"priority\": 10}", where)
		}
		p = obj
	}
	for _, kv := range sets {
		path, value, ok := strings.Cut(kv, "=")
		if !ok || path == "" {
			return nil, usageErrorf("--set %q: want FIELD=VALUE, such as priority=10 or headers.X-Team=ops", kv)
		}
		keys := strings.Split(path, ".")
		obj := p
		for _, k := range keys[:len(keys)-1] {
			next, ok := obj[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				obj[k] = next
			}
			obj = next
		}
		obj[keys[len(keys)-1]] = setValue(keys, value)
	}
	return p, nil
}

// setValue is the value of --set FIELD=VALUE: nil for null; the text
// itself for a field that holds a string (cron_expr, headers.X-Team); else
// its JSON, or the text when it is not JSON (retry_policy.initial_backoff=2s).
func setValue(path []string, value string) any {
	if value == "null" {
		return nil
	}
	if stringField(path) {
		return value
	}
	var v any
	if err := json.Unmarshal([]byte(value), &v); err != nil {
		return value
	}
	return v
}

// stringField reports whether the task's field at path holds a string.
func stringField(path []string) bool {
	t := reflect.TypeFor[sundial.Task]()
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			found := false
			for f := range t.Fields() {
				if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == seg {
					t, found = f.Type, true
					break
				}
			}
			if !found {
				return false
			}
		case reflect.Map:
			t = t.Elem()
		default:
			return false // params, retry_policy: any JSON
		}
	}
	return t.Kind() == reflect.String
}

// sendPatch sends the merge patch body of task id, with If-Match etag
// ("" for none), and returns the task as it is after it.
func sendPatch(ctx context.Context, a *apiClient, id int64, body map[string]any, etag string) (json.RawMessage, error) {
	h := http.Header{"Content-Type": {mergePatchType}}
	if etag != "" {
		h.Set("If-Match", etag)
	}
	var after json.RawMessage
	_, err := a.send(ctx, http.MethodPatch, fmt.Sprintf("/api/v1/tasks/%d", id), nil, body, &after, h)
	return after, err
}

// printPatched says what a patch (or an edit: verb) changed of the task
// before: the fields that differ, or that nothing did; or prints the task
// in the output format.
func (c *cli) printPatched(cmd *cobra.Command, out, verb string, before taskItem, after json.RawMessage) error {
	w := cmd.OutOrStdout()
	switch out {
	case "json":
		return writeJSON(w, after)
	case "yaml":
		return writeYAML(w, after)
	}
	var a sundial.Task
	if err := json.Unmarshal(after, &a); err != nil {
		return fmt.Errorf("the answer is not a task: %v", err)
	}
	if a.Version == before.t.Version {
		_, err := fmt.Fprintf(w, "task/%s unchanged\n", a.Name)
		return err
	}
	var b sundial.Task
	_ = json.Unmarshal(before.raw, &b)
	from, to := taskFields(&b), taskFields(&a)
	var paths []string
	for _, k := range taskFieldOrder(from, to) {
		for _, ch := range diffJSON(k, from[k], to[k]) {
			paths = append(paths, ch.path)
		}
	}
	what := ""
	if len(paths) > 0 {
		what = ": " + strings.Join(paths, ", ")
	}
	_, err := fmt.Fprintf(w, "task/%s %s%s\n", a.Name, verb, what)
	return err
}

func (c *cli) taskEditCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "edit NAME|ID",
		Short: "Edit a task in $VISUAL or $EDITOR, as YAML; saved, the change is sent as a patch",
		Long: `Open the task in $VISUAL (or $EDITOR, or vi) as YAML, in the format apply reads (the
fields not at their default; secrets as "***", which keeps them). Once the editor exits, the
fields changed are sent as a JSON merge patch (a field removed takes its default), with
If-Match naming the version read: if the task changed on the server meanwhile, nothing is
written (412), and the edit is kept in its file for you to make again. An edit that changes
nothing, or empties the file, sends nothing. An edit the server refuses is kept in its file
too.`,
		Example:           "  sundial task edit nightly-report\n  EDITOR=nano sundial task edit 7",
		Args:              exactArgs(1, "the name or id of a task"),
		ValidArgsFunction: c.completeTasks,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(out, "table", "json", "yaml"); err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			return c.edit(cmd, a, args[0], out)
		},
	}
	addOutputFlag(cmd, &out, "table", "table", "json", "yaml")
	return cmd
}

// edit is "task edit ref".
func (c *cli) edit(cmd *cobra.Command, a *apiClient, ref, out string) error {
	ctx := cmd.Context()
	it, err := resolveTask(ctx, a, ref)
	if err != nil {
		return err
	}
	// The version first: a change made after it is then refused by
	// If-Match, however the export below shows it.
	var raw json.RawMessage
	h, err := a.send(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", it.t.ID), nil, nil, &raw, nil)
	if err != nil {
		return err
	}
	if it, err = decodeTask(raw); err != nil {
		return err
	}
	etag := h.Get("ETag")
	var doc []byte
	q := url.Values{"format": {"yaml"}, "name": {it.t.Name}}
	if _, err := a.send(ctx, http.MethodGet, "/api/v1/tasks", q, nil, &doc, nil); err != nil {
		return err
	}
	orig, err := parseManifests("the task", doc, false)
	if err != nil || len(orig) != 1 {
		return fmt.Errorf("the export of task %q is not one task: %v", it.t.Name, err)
	}

	f, err := os.CreateTemp("", "sundial-edit-*.yaml")
	if err != nil {
		return err
	}
	path := f.Name()
	text := fmt.Sprintf("# task/%s (id %d, version %d). Save and quit to send what you changed; a field removed\n"+
		"# takes its default, and secrets shown as \"***\" keep their value. No change, or an empty\n"+
		"# file, cancels.\n", it.t.Name, it.t.ID, it.t.Version) + string(doc)
	_, werr := f.WriteString(text)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = os.Remove(path)
		return err
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.Remove(path)
		}
	}()
	if err := c.runEditor(ctx, path); err != nil {
		return err
	}
	edited, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	ms, err := parseManifests(path, edited, false)
	switch {
	case string(edited) == text || (err == nil && len(ms) == 0):
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "task/%s unchanged: the edit was cancelled\n", it.t.Name)
		return err
	case err != nil:
		keep = true
		return fmt.Errorf("%w; the edit is kept in %s", err, path)
	case len(ms) != 1:
		keep = true
		return usageErrorf("%s holds %d tasks; an edit is of one task (the edit is kept there)", path, len(ms))
	}
	patch := mergeDiff(orig[0].fields, ms[0].fields)
	if len(patch) == 0 {
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "task/%s unchanged: the edit changed nothing\n", it.t.Name)
		return err
	}
	after, err := sendPatch(ctx, a, it.t.ID, patch, etag)
	if e, ok := errors.AsType[*remoteError](err); ok && e.Status == http.StatusPreconditionFailed {
		keep = true
		now := ""
		var cur cliTask
		if a.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%d", it.t.ID), nil, nil, &cur) == nil {
			now = fmt.Sprintf(" (version %d, read at version %d)", cur.Version, it.t.Version)
		}
		return fmt.Errorf("conflict: task %q changed on the server since it was read%s, so the edit was not applied; "+
			"it is kept in %s: run \"sundial task edit %s\" again and make it anew", it.t.Name, now, path, ref)
	}
	if err != nil {
		keep = true
		return fmt.Errorf("%w; the edit is kept in %s", err, path)
	}
	return c.printPatched(cmd, out, "edited", it, after)
}

// runEditor opens path in $VISUAL, else $EDITOR, else vi (a command with
// arguments is split at spaces: "code --wait"), on the terminal, and waits
// for it.
func (c *cli) runEditor(ctx context.Context, path string) error {
	editor := c.getenv("VISUAL")
	if editor == "" {
		editor = c.getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	args := strings.Fields(editor)
	ed := exec.CommandContext(ctx, args[0], append(args[1:], path)...)
	ed.Stdin, ed.Stdout, ed.Stderr = c.stdin, c.stdout, c.stderr
	if ed.Stdin == nil {
		ed.Stdin = bytes.NewReader(nil)
	}
	if err := ed.Run(); err != nil {
		return fmt.Errorf("the editor %q: %v; the task is unchanged", editor, err)
	}
	return nil
}

// mergeDiff is the JSON merge patch that makes from into to: the fields
// to changed or added, null for those it removed; objects member by
// member.
func mergeDiff(from, to map[string]any) map[string]any {
	p := map[string]any{}
	for k := range from {
		if _, ok := to[k]; !ok {
			p[k] = nil
		}
	}
	keys := make([]string, 0, len(to))
	for k := range to {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fv, had := from[k]
		tv := to[k]
		if had && reflect.DeepEqual(fv, tv) {
			continue
		}
		fm, fok := fv.(map[string]any)
		tm, tok := tv.(map[string]any)
		if had && fok && tok {
			if sub := mergeDiff(fm, tm); len(sub) > 0 {
				p[k] = sub
			}
			continue
		}
		p[k] = tv
	}
	return p
}
