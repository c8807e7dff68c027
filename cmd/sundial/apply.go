package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/sundialhq/sundial"
)

// A file that apply, diff and task create read declares tasks by name,
// with the API's fields (docs/api.md#tasks): one YAML document per task, or
// a document holding a list of them (JSON is YAML: an array of tasks, as
// "task ls -o json" prints, is read too). A directory is its .yaml, .yml
// and .json files, in name order, not its subdirectories. The fields the
// server sets (id, version, created_at, updated_at, next_fire_time,
// disabled_at, disabled_by, state, fire_count) are ignored, so that what "task get -o
// yaml" prints can be applied. GET /api/v1/tasks?format=yaml exports the
// live tasks in this format.

// applyHelp is the help of apply and diff on what they read and compare.
const applyHelp = `A file declares tasks by name, with the API's fields (docs/api.md#tasks): one YAML document
per task ("---" between them), or a document that is a list of tasks. JSON is read as YAML. A
directory is its .yaml, .yml and .json files, in name order (not its subdirectories); - is
standard input. The fields the server sets (id, version, created_at, updated_at,
next_fire_time, disabled_at, disabled_by, state, fire_count) are ignored, so what "sundial task get -o
yaml" prints can be applied; GET /api/v1/tasks?format=yaml exports the live tasks as files.

  name: nightly-report
  cron_expr: "0 30 2 * * *"
  timezone: Europe/Paris
  target_url: https://reports.internal/run
  headers:
    Authorization: "***"      # keeps the stored value (see below)
  retry_policy: {max_attempts: 3}

A task missing from the server is created (POST); one that differs is replaced (PUT, with the
version read, so a change made meanwhile is refused, not overwritten); one that is the same is
left alone. A task is the whole of its fields: a field the file leaves out takes the API's
default (status and disabled_reason excepted: left out, they stay as they are, so a paused
task stays paused). To change only some fields, see "sundial task patch". diff compares the
file with the server field by field, after filling in those defaults and normalising the
file as the server does (enum case, cron expression, retry_policy's every key).

Secrets (sensitive header values, credentials in target_url, signing_secret) are write-only:
the API answers them as "***". A file that gives "***" keeps the stored value (the task must
have one, and keep its target_url's origin). A file that gives the secret itself cannot be compared with "***", so diff does not
count it as a difference; it says so, and apply sends it: the server stores it only if it differs
from the stored one, so applying the same secret again changes nothing (the version stays) and
apply reports the task unchanged; a new secret is stored and reported. signing_secret:
"generate" makes one when the task has none, and keeps the one it has otherwise.

delay_seconds, relative to each request, is refused: give run_at.

--prune --selector SEL (-l) deletes, after the files are applied, the live tasks whose labels
match the selector and that no file declares (by name): give the tasks of a directory a label
of their own (labels: {owner: reports-repo}) and apply with --prune -l owner=reports-repo, and
removing a file removes its task. --prune needs --selector, which says which tasks the files
own; a task the selector does not match is never pruned. With --dry-run apply says what it
would prune; diff with --prune --selector lists the tasks apply would prune (-).`

// serverSetFields are the fields of a task the server sets: a file may
// hold them (task get -o yaml prints them), and they are ignored.
var serverSetFields = []string{"id", "version", "created_at", "updated_at", "next_fire_time", "disabled_at", "disabled_by", "state", "fire_count"}

// manifest is one task a file declares.
type manifest struct {
	where  string         // FILE:LINE, for messages
	name   string         // its name, trimmed
	keys   []string       // its fields, in the file's order
	fields map[string]any // its fields, as given (less the server's): what apply sends
	json   []byte         // fields as JSON
}

// task decodes the manifest into a task, strictly: an unknown field, or a
// value of the wrong type, is an error naming it.
func (m *manifest) task() (*sundial.Task, error) {
	t := &sundial.Task{}
	dec := json.NewDecoder(bytes.NewReader(m.json))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return nil, usageErrorf("%s: task %q: %s: a %s does not go there (want %s)", m.where, m.name, te.Field, te.Value, jsonTypeName(te.Type))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return nil, usageErrorf("%s: task %q: unknown field %s (the fields are docs/api.md#tasks')", m.where, m.name,
				strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return nil, usageErrorf("%s: task %q: %v", m.where, m.name, err)
	}
	return t, nil
}

// jsonTypeName names the JSON a Go type takes.
func jsonTypeName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[time.Time]() {
		return "an RFC 3339 time, such as \"2030-01-02T15:04:05Z\""
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	}
	return t.String()
}

// readManifests reads the tasks the files (or directories, or - for
// stdin) declare, in order. For apply and diff (byName), every task has a
// name, given once, and no delay_seconds; task create takes a one-off
// task without a name (the server makes one up) and delay_seconds.
func readManifests(paths []string, stdin io.Reader, byName bool) ([]*manifest, error) {
	var all []*manifest
	read := func(name string, data []byte) error {
		ms, err := parseManifests(name, data, byName)
		all = append(all, ms...)
		return err
	}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("standard input: %w", err)
			}
			if err := read("(standard input)", data); err != nil {
				return nil, err
			}
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, usageErrorf("-f %s: %v", p, errors.Unwrap(err))
		}
		files := []string{p}
		if fi.IsDir() {
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, usageErrorf("-f %s: %v", p, err)
			}
			files = files[:0]
			for _, e := range entries {
				ext := strings.ToLower(filepath.Ext(e.Name()))
				if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
			if len(files) == 0 {
				return nil, usageErrorf("-f %s: the directory holds no .yaml, .yml or .json file", p)
			}
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, usageErrorf("-f %s: %v", f, errors.Unwrap(err))
			}
			if err := read(f, data); err != nil {
				return nil, err
			}
		}
	}
	if len(all) == 0 {
		return nil, usageErrorf("no task in %s", strings.Join(paths, ", "))
	}
	seen := map[string]*manifest{}
	for _, m := range all {
		if m.name == "" {
			continue
		}
		if first, ok := seen[m.name]; ok {
			return nil, usageErrorf("%s: task %q is declared twice, here and at %s", m.where, m.name, first.where)
		}
		seen[m.name] = m
	}
	return all, nil
}

// parseManifests reads the tasks of one file.
func parseManifests(name string, data []byte, byName bool) ([]*manifest, error) {
	var out []*manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, usageErrorf("%s: %v", name, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		switch {
		case root.Kind == yaml.ScalarNode && root.Tag == "!!null":
			continue // an empty document
		case root.Kind == yaml.MappingNode:
			m, err := toManifest(name, root, byName)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		case root.Kind == yaml.SequenceNode:
			for _, n := range root.Content {
				if n.Kind != yaml.MappingNode {
					return nil, usageErrorf("%s:%d: want a task (a mapping of its fields)", name, n.Line)
				}
				m, err := toManifest(name, n, byName)
				if err != nil {
					return nil, err
				}
				out = append(out, m)
			}
		default:
			return nil, usageErrorf("%s:%d: want a task (a mapping of its fields) or a list of tasks", name, root.Line)
		}
	}
}

// toManifest reads one task's mapping.
func toManifest(file string, n *yaml.Node, byName bool) (*manifest, error) {
	where := fmt.Sprintf("%s:%d", file, n.Line)
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, usageErrorf("%s: %v", where, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	jv, err := jsonValue(v, "")
	if err != nil {
		return nil, usageErrorf("%s: %v", where, err)
	}
	fields := jv.(map[string]any)
	m := &manifest{where: where, fields: fields}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(serverSetFields, k) {
			m.keys = append(m.keys, k)
		}
	}
	for _, k := range serverSetFields {
		delete(fields, k)
	}
	name, _ := fields["name"].(string)
	m.name = strings.TrimSpace(name)
	if m.name == "" && byName {
		return nil, usageErrorf("%s: a task needs a name: apply and diff find tasks by name", where)
	}
	if _, ok := fields["delay_seconds"]; ok && byName {
		return nil, usageErrorf("%s: task %q: delay_seconds counts from each request, so every apply would move the task: give run_at", where, m.name)
	}
	for _, f := range []string{"run_at", "start_at", "end_at"} {
		if v, ok := fields[f]; ok && v != nil {
			at, _ := v.(string)
			if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
				return nil, usageErrorf("%s: task %q: %s: %s: want an RFC 3339 time, such as \"2030-01-02T15:04:05Z\"", where, m.name, f, valueText(mustJSON(v)))
			}
		}
	}
	if h, ok := fields["headers"].(map[string]any); ok {
		for k, v := range h {
			if _, ok := v.(string); !ok {
				return nil, usageErrorf("%s: task %q: headers.%s: a header's value is a string: quote it (%q)", where, m.name, k, fmt.Sprint(v))
			}
		}
	}
	if _, ok := fields["headers_json"]; ok {
		return nil, usageErrorf("%s: task %q: give headers as a mapping, not headers_json", where, m.name)
	}
	if m.json, err = json.Marshal(fields); err != nil {
		return nil, usageErrorf("%s: task %q: %v", where, m.name, err)
	}
	if _, err := m.task(); err != nil {
		return nil, err
	}
	return m, nil
}

// jsonValue checks that a decoded YAML value is JSON: mappings with
// string keys, and turns them into map[string]any.
func jsonValue(v any, path string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			j, err := jsonValue(e, joinPath(path, k))
			if err != nil {
				return nil, err
			}
			x[k] = j
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			s, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("%s: the key %v is not a string", dash(path), k)
			}
			j, err := jsonValue(e, joinPath(path, s))
			if err != nil {
				return nil, err
			}
			out[s] = j
		}
		return out, nil
	case []any:
		for i, e := range x {
			j, err := jsonValue(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			x[i] = j
		}
		return x, nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case []byte:
		return nil, fmt.Errorf("%s: binary data is not JSON", dash(path))
	}
	return v, nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// planned is what apply does with one task, and what diff shows of it.
type planned struct {
	m        *manifest
	live     *sundial.Task // nil: the task is created
	changes  []fieldChange // what differs, field by field (a create: every field given)
	secrets  []string      // secrets the file gives, which the API does not show: not compared, sent
	generate bool          // signing_secret "generate" makes one
	body     map[string]any
}

// fieldChange is one field that differs: its path (headers.X-Team), its
// value on the server and in the file, as JSON (nil: absent).
type fieldChange struct {
	path     string
	from, to json.RawMessage
}

func (p *planned) create() bool { return p.live == nil }

// changed reports whether apply writes the task, or may (a secret).
func (p *planned) changed() bool { return p.live == nil || len(p.changes) > 0 || len(p.secrets) > 0 }

// plan reads the live task of each manifest and compares it with the file.
// Any error, the file's or the server's, comes before apply writes
// anything.
func plan(ctx context.Context, a *apiClient, ms []*manifest, now time.Time) ([]*planned, error) {
	out := make([]*planned, len(ms))
	err := parallel(len(ms), func(i int) error {
		m := ms[i]
		raws, err := a.list(ctx, "/api/v1/tasks", url.Values{"name": {m.name}}, 1)
		if err != nil {
			return err
		}
		var live *sundial.Task
		if len(raws) == 1 {
			live = &sundial.Task{}
			if err := json.Unmarshal(raws[0], live); err != nil {
				return fmt.Errorf("task %q: the answer is not what the Sundial API answers: %v", m.name, err)
			}
		}
		out[i], err = compare(m, live, now)
		return err
	})
	return out, err
}

// signingPlaceholder stands for a signing secret the file keeps ("***")
// or has the server make ("generate") while the task is normalised: a
// valid secret, masked before anything is compared.
const signingPlaceholder = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// compare plans one task: live is the task on the server, as the API
// answered it (secrets masked), or nil.
func compare(m *manifest, live *sundial.Task, now time.Time) (*planned, error) {
	p := &planned{m: m, live: live, body: copyFields(m.fields)}
	want, err := m.task()
	if err != nil {
		return nil, err
	}
	// "***" keeps a stored secret: the task must have one, and its
	// target_url the same origin. The server's own rule, with the task as
	// the API answered it: the values kept stay "***".
	if err := sundial.KeepMasked(want, live, nil); err != nil {
		return nil, fileError(m, err)
	}
	switch want.SigningSecret {
	case sundial.Masked:
		want.SigningSecret = signingPlaceholder
	case "generate":
		if live != nil && live.SigningSecret != "" {
			p.body["signing_secret"] = sundial.Masked // keep the one it has
		} else {
			p.generate = true
		}
		want.SigningSecret = signingPlaceholder
	}
	// The secrets given in clear, before they are masked.
	var clear []string
	for k, v := range want.Headers {
		if sundial.SensitiveHeader(k) && v != sundial.Masked {
			clear = append(clear, "headers."+k)
		}
	}
	if _, ui, _, ok := sundial.SplitUserinfo(want.TargetURL); ok && ui != sundial.Masked {
		clear = append(clear, "target_url")
	}
	if want.SigningSecret != "" && want.SigningSecret != signingPlaceholder {
		clear = append(clear, "signing_secret")
	}

	if live == nil {
		err = want.Normalize(now)
	} else {
		err = want.NormalizeReplacing(live, now)
	}
	if err == nil {
		// A reason left out is kept, as the server keeps it.
		var reason *string
		if _, ok := m.fields["disabled_reason"]; ok {
			reason = &want.DisabledReason
		}
		err = want.NoteDisabled(live, reason, "", now)
	}
	if err != nil {
		return nil, fileError(m, err)
	}
	if live == nil || live.Status == sundial.TaskCompleted {
		// As the server does: a bounded task with no fire left is
		// COMPLETED (only it knows the fires counted of a live task
		// that still has some).
		want.Arm(now)
	}
	sundial.MaskTask(want)
	wantFields := taskFields(want)
	if live == nil {
		for _, k := range m.keys {
			// As the file gives it, but for the fields that hold
			// secrets: masked.
			var v json.RawMessage
			if k == "headers" || k == "target_url" || k == "signing_secret" {
				v = wantFields[k]
			}
			if v == nil {
				v, _ = json.Marshal(m.fields[k])
			}
			p.changes = append(p.changes, fieldChange{path: k, to: v})
		}
		return p, nil
	}
	p.body["version"] = live.Version
	liveFields := taskFields(live)
	for _, k := range taskFieldOrder(wantFields, liveFields) {
		p.changes = append(p.changes, diffJSON(k, liveFields[k], wantFields[k])...)
	}
	for _, s := range clear {
		if !slices.ContainsFunc(p.changes, func(c fieldChange) bool { return c.path == s || strings.HasPrefix(s, c.path+".") }) {
			p.secrets = append(p.secrets, s)
		}
	}
	sort.Strings(p.secrets)
	return p, nil
}

// fileError says where a rule of the task was broken: the file, the task,
// the message, the field and the token, as the API would.
func fileError(m *manifest, err error) error {
	e, ok := errors.AsType[*sundial.Error](err)
	if !ok {
		return usageErrorf("%s: task %q: %v", m.where, m.name, err)
	}
	ae := &remoteError{Message: e.Message, Field: e.Field, Token: e.Token}
	return usageErrorf("%s: task %q: %s", m.where, m.name, ae.Error())
}

// copyFields copies a decoded JSON object, one level deep.
func copyFields(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// taskFields is a task's fields as JSON, less those the server sets.
func taskFields(t *sundial.Task) map[string]json.RawMessage {
	b, _ := json.Marshal(t)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for _, k := range serverSetFields {
		delete(m, k)
	}
	return m
}

// taskFieldOrder is the union of the keys, in the order of the API's
// fields (sundial.Task's), unknown ones last by name.
func taskFieldOrder(a, b map[string]json.RawMessage) []string {
	var order []string
	rt := reflect.TypeFor[sundial.Task]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		_, inA := a[name]
		_, inB := b[name]
		if inA || inB {
			order = append(order, name)
		}
	}
	var rest []string
	for _, m := range []map[string]json.RawMessage{a, b} {
		for k := range m {
			if !slices.Contains(order, k) && !slices.Contains(rest, k) {
				rest = append(rest, k)
			}
		}
	}
	sort.Strings(rest)
	return append(order, rest...)
}

// diffJSON compares two JSON values at path: objects key by key, down to
// the fields that differ; anything else as a whole.
func diffJSON(path string, from, to json.RawMessage) []fieldChange {
	var f, t any
	if from != nil {
		_ = json.Unmarshal(from, &f)
	}
	if to != nil {
		_ = json.Unmarshal(to, &t)
	}
	if from != nil && to != nil && reflect.DeepEqual(f, t) {
		return nil
	}
	if from == nil && to == nil {
		return nil
	}
	fo, fok := f.(map[string]any)
	to2, tok := t.(map[string]any)
	if !fok || !tok || from == nil || to == nil {
		return []fieldChange{{path: path, from: canonicalJSON(from), to: canonicalJSON(to)}}
	}
	keys := make([]string, 0, len(fo)+len(to2))
	for k := range fo {
		keys = append(keys, k)
	}
	for k := range to2 {
		if _, ok := fo[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []fieldChange
	for _, k := range keys {
		var a, b json.RawMessage
		if v, ok := fo[k]; ok {
			a, _ = json.Marshal(v)
		}
		if v, ok := to2[k]; ok {
			b, _ = json.Marshal(v)
		}
		out = append(out, diffJSON(path+"."+k, a, b)...)
	}
	return out
}

// mustJSON is the JSON of a value decoded from JSON or YAML.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// canonicalJSON is v re-encoded compactly, keys sorted; nil stays nil.
func canonicalJSON(v json.RawMessage) json.RawMessage {
	if v == nil {
		return nil
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return v
	}
	b, _ := json.Marshal(x)
	return b
}

// valueText writes a value of a change: its JSON, or (none).
func valueText(v json.RawMessage) string {
	if v == nil {
		return "(none)"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var x any
	if json.Unmarshal(v, &x) != nil {
		return string(v)
	}
	_ = enc.Encode(x)
	return strings.TrimSuffix(buf.String(), "\n")
}

// paths lists the paths of the changes, and the secrets sent, which may
// or may not differ from the stored ones.
func (p *planned) paths() string {
	var out []string
	for _, c := range p.changes {
		out = append(out, c.path)
	}
	if len(p.secrets) > 0 {
		out = append(out, "and the secrets "+strings.Join(p.secrets, ", ")+" sent")
	}
	return strings.Join(out, ", ")
}

// writeDiff prints what apply would change: for each task it would create
// or change, its fields; the secrets it would send that the API does not
// show; with prune (--prune), the tasks it would delete. It returns how
// many tasks differ.
func writeDiff(w io.Writer, plans []*planned, prune bool, pruned []pruneTarget) (int, error) {
	var creates, updates, same int
	var b strings.Builder
	for _, p := range plans {
		switch {
		case p.create():
			creates++
			fmt.Fprintf(&b, "+ task/%s (to create)\n", p.m.name)
			for _, c := range p.changes {
				v := valueText(c.to)
				if c.path == "signing_secret" && p.generate {
					v = "(generated by the server)"
				}
				fmt.Fprintf(&b, "    %s: %s\n", c.path, v)
			}
		case len(p.changes) > 0:
			updates++
			fmt.Fprintf(&b, "~ task/%s (id %d)\n", p.m.name, p.live.ID)
			for _, c := range p.changes {
				to := valueText(c.to)
				if c.path == "signing_secret" && p.generate {
					to = "(generated by the server)"
				}
				fmt.Fprintf(&b, "    %s: %s -> %s\n", c.path, valueText(c.from), to)
			}
		default:
			same++
		}
		if len(p.secrets) > 0 && !p.create() {
			if len(p.changes) == 0 {
				fmt.Fprintf(&b, "= task/%s (id %d)\n", p.m.name, p.live.ID)
			}
			for _, s := range p.secrets {
				fmt.Fprintf(&b, "    %s: a secret, which the API shows as \"***\": not compared; apply sends it, "+
					"and the server changes it only if it differs\n", s)
			}
		}
	}
	for _, p := range pruned {
		fmt.Fprintf(&b, "- task/%s (id %d, to prune)\n", p.name, p.id)
	}
	fmt.Fprintf(&b, "%d to create, %d to change, %d unchanged", creates, updates, same)
	if prune {
		fmt.Fprintf(&b, ", %d to prune", len(pruned))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return creates + updates + len(pruned), err
}

// applyFlags are the flags of apply and diff.
type applyFlags struct {
	files    []string
	dryRun   bool
	prune    bool
	selector string
}

func (f *applyFlags) add(cmd *cobra.Command, apply bool) {
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.files, "filename", "f", nil, "a YAML or JSON file of tasks, a directory of them, or - (repeatable)")
	if apply {
		fl.BoolVar(&f.dryRun, "dry-run", false, "print what would be done, and do nothing")
	}
	fl.BoolVar(&f.prune, "prune", false, "delete the live tasks that match --selector and that no file declares")
	fl.StringVarP(&f.selector, "selector", "l", "", "with --prune: the label selector of the tasks the files own (owner=reports-repo)")
}

// check refuses flags that do not go together.
func (f *applyFlags) check(cmd *cobra.Command) error {
	if len(f.files) == 0 {
		return usageErrorf("%s: give the tasks' files with -f FILE|DIR (- for standard input)", commandName(cmd))
	}
	if f.prune && strings.TrimSpace(f.selector) == "" {
		return usageErrorf("%s: --prune needs --selector (-l): the label selector of the tasks the files own, "+
			"so that a task they do not own is never deleted", commandName(cmd))
	}
	if !f.prune && f.selector != "" {
		return usageErrorf("%s: --selector says which live tasks --prune may delete; give --prune too", commandName(cmd))
	}
	return nil
}

// pruneTarget is a live task that apply --prune deletes.
type pruneTarget struct {
	id   int64
	name string
}

// planPrune lists the live tasks that match selector and that no manifest
// declares, by id.
func planPrune(ctx context.Context, a *apiClient, ms []*manifest, selector string) ([]pruneTarget, error) {
	raws, err := a.list(ctx, "/api/v1/tasks", url.Values{"selector": {selector}}, 0)
	if err != nil {
		return nil, err
	}
	declared := map[string]bool{}
	for _, m := range ms {
		declared[m.name] = true
	}
	var out []pruneTarget
	for _, raw := range raws {
		it, err := decodeTask(raw)
		if err != nil {
			return nil, err
		}
		if !declared[it.t.Name] {
			out = append(out, pruneTarget{id: it.t.ID, name: it.t.Name})
		}
	}
	return out, nil
}

// prune deletes the tasks, in bulks of up to 1,000 (each all or none),
// and says so of each; with dryRun it only says what it would delete.
func prune(cmd *cobra.Command, a *apiClient, targets []pruneTarget, dryRun bool) error {
	w := cmd.OutOrStdout()
	for start := 0; start < len(targets); start += maxBulk {
		part := targets[start:min(start+maxBulk, len(targets))]
		if dryRun {
			for _, p := range part {
				fmt.Fprintf(w, "task/%s would be pruned (dry run)\n", p.name)
			}
			continue
		}
		ids := make([]int64, len(part))
		for i, p := range part {
			ids[i] = p.id
		}
		var res bulkResult
		if err := a.do(cmd.Context(), http.MethodPost, "/api/v1/tasks:bulk", nil,
			map[string]any{"action": "delete", "ids": ids}, &res); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		for _, it := range res.Items {
			fmt.Fprintf(w, "task/%s pruned\n", it.Name)
		}
	}
	return nil
}

// maxBulk is the most tasks one POST /api/v1/tasks:bulk takes.
const maxBulk = 1000

func (c *cli) applyCommand() *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR... [--dry-run] [--prune --selector SEL]",
		Short: "Create the tasks that files declare, and update those that differ",
		Long:  "Create the tasks that files declare and update those that differ, leaving alone those that do not.\n\n" + applyHelp,
		Example: `  sundial diff -f tasks/ && echo "nothing to do"
  sundial apply -f tasks/
  sundial apply -f tasks/ --prune -l owner=reports-repo
  sundial task get nightly-report -o yaml > tasks/nightly-report.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			ms, err := readManifests(f.files, c.stdin, true)
			if err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			plans, err := plan(cmd.Context(), a, ms, c.now())
			if err != nil {
				return err
			}
			var pruned []pruneTarget
			if f.prune {
				if pruned, err = planPrune(cmd.Context(), a, ms, f.selector); err != nil {
					return err
				}
			}
			if err := c.apply(cmd, a, plans, f.dryRun); err != nil {
				return err
			}
			return prune(cmd, a, pruned, f.dryRun)
		},
	}
	f.add(cmd, true)
	return cmd
}

// apply writes the plans in order, and says what it did with each task.
// It stops at the first refusal: the tasks before it are applied.
func (c *cli) apply(cmd *cobra.Command, a *apiClient, plans []*planned, dryRun bool) error {
	w := cmd.OutOrStdout()
	for _, p := range plans {
		ref := "task/" + p.m.name
		switch {
		case !p.changed():
			fmt.Fprintf(w, "%s unchanged\n", ref)
		case dryRun && p.create():
			fmt.Fprintf(w, "%s would be created (dry run)\n", ref)
		case dryRun && len(p.changes) == 0:
			fmt.Fprintf(w, "%s would be sent its secrets %s, which the API does not show, and changed only if they differ (dry run)\n",
				ref, strings.Join(p.secrets, ", "))
		case dryRun:
			fmt.Fprintf(w, "%s would be updated: %s (dry run)\n", ref, p.paths())
		case p.create():
			var t createdTask
			if err := a.do(cmd.Context(), http.MethodPost, "/api/v1/tasks", nil, p.body, &t); err != nil {
				return fmt.Errorf("%s: task %q: %w", p.m.where, p.m.name, err)
			}
			fmt.Fprintf(w, "%s created (id %d)\n", ref, t.ID)
			t.printSecret(w)
		default:
			var t createdTask
			path := fmt.Sprintf("/api/v1/tasks/%d", p.live.ID)
			if err := a.do(cmd.Context(), http.MethodPut, path, nil, p.body, &t); err != nil {
				return fmt.Errorf("%s: task %q: %w", p.m.where, p.m.name, err)
			}
			switch {
			case len(p.changes) > 0:
				fmt.Fprintf(w, "%s updated: %s\n", ref, p.paths())
			case t.Version == p.live.Version:
				// The server wrote nothing: the secrets are the stored ones.
				fmt.Fprintf(w, "%s unchanged (its secrets %s are the stored ones)\n", ref, strings.Join(p.secrets, ", "))
			default:
				fmt.Fprintf(w, "%s updated: its secrets (%s) differed from the stored ones\n", ref, strings.Join(p.secrets, ", "))
			}
			t.printSecret(w)
		}
	}
	return nil
}

func (c *cli) diffCommand() *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR... [--prune --selector SEL]",
		Short: "Print what apply would change, field by field; exit 3 when it would change anything",
		Long: `Print what apply would do, field by field: the tasks it would create (+) with the fields the
files give, and those it would change (~) with each field's value on the server and in the files;
with --prune --selector, the live tasks it would delete (-).
It exits 0 when apply would change nothing, 3 when it would, 1 on an error, 2 on a usage
mistake or a file that is not valid.

` + applyHelp,
		Example: `  sundial diff -f tasks/
  ~ task/nightly-report (id 7)
      cron_expr: "0 30 2 * * *" -> "0 45 2 * * *"
  0 to create, 1 to change, 2 unchanged`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(cmd); err != nil {
				return err
			}
			ms, err := readManifests(f.files, c.stdin, true)
			if err != nil {
				return err
			}
			a, err := c.client()
			if err != nil {
				return err
			}
			plans, err := plan(cmd.Context(), a, ms, c.now())
			if err != nil {
				return err
			}
			var pruned []pruneTarget
			if f.prune {
				if pruned, err = planPrune(cmd.Context(), a, ms, f.selector); err != nil {
					return err
				}
			}
			n, err := writeDiff(cmd.OutOrStdout(), plans, f.prune, pruned)
			if err != nil || n == 0 {
				return err
			}
			return &exitError{code: 3, err: fmt.Errorf("%d tasks differ", n), quiet: true}
		},
	}
	f.add(cmd, false)
	return cmd
}
