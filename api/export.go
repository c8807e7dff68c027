package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sundialhq/sundial"
)

// GET /api/v1/tasks?format=yaml (or json) exports the live tasks the
// filters select in the format "sundial apply" reads: each task by name with
// the fields a client writes, less those at their default; secrets masked
// ("***", which apply reads as "keep the stored value"); no server-set
// field. Applied again to the same server, it changes nothing. YAML is a
// stream of documents, one per task; JSON an array of them.

// exportPage is how many tasks an export reads from the store at a time.
const exportPage = maxPageLimit

// exportFormats are the formats of an export and their media types.
var exportFormats = map[string]string{"json": "application/json", "yaml": "application/yaml"}

// handleTaskExport answers the tasks f selects in format, reading them a
// page at a time. The answer starts once the first page is read: a later
// failure cuts it short (the connection is closed, so a client never takes
// part of the tasks for all of them).
func (s *Server) handleTaskExport(w http.ResponseWriter, r *http.Request, f sundial.TaskListParams, format string) {
	f.Limit = exportPage
	tasks, err := s.store.TaskList(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", exportFormats[format])
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	now := s.now()
	var b bytes.Buffer
	first := true
	if format == "json" {
		b.WriteString("[")
	}
	for {
		for _, t := range tasks {
			doc := exportTask(taskView(t, now))
			switch format {
			case "yaml":
				if !first {
					b.WriteString("---\n")
				}
				if err := writeYAMLDoc(&b, doc); err != nil {
					panic(http.ErrAbortHandler) // a task the API wrote is JSON, which is YAML
				}
			default:
				if !first {
					b.WriteString(",")
				}
				b.WriteString("\n  ")
				_ = json.Indent(&b, doc, "  ", "  ")
			}
			first = false
		}
		if _, err := w.Write(b.Bytes()); err != nil {
			return
		}
		b.Reset()
		if len(tasks) < exportPage {
			break
		}
		f.AfterID = tasks[len(tasks)-1].ID
		if tasks, err = s.store.TaskList(r.Context(), f); err != nil {
			s.logger().ErrorContext(r.Context(), "export cut short", "component", "api", "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	if format == "json" {
		if !first {
			b.WriteString("\n")
		}
		b.WriteString("]\n")
		_, _ = w.Write(b.Bytes())
	}
}

// exportTask is t, as an answer shows it, as apply reads it: its JSON
// object with the fields a client writes, less those at their default
// value (exportDefaults), in the order of the task's fields.
func exportTask(t *sundial.Task) []byte {
	raw, _ := json.Marshal(t)
	doc, _ := parseObject(raw)
	writable := keysOf(reflect.TypeFor[taskRequest]()).fields
	defaults := exportDefaults()
	for _, k := range slices.Clone(doc.keys) {
		_, known := writable[k]
		if !known || slices.Contains(serverSet, k) || (k != "name" && sameJSON(doc.vals[k], defaults[k])) {
			doc.del(k)
		}
	}
	return doc.encode()
}

// exportDefaults are the fields of a task that gives none but those it
// needs, as an answer shows them: a field at this value is left out of an
// export. A field a task always gives (cron_expr, run_at, target_url) has
// none, and "" and null (the value of every field a request leaves out)
// are defaults of every field.
var exportDefaults = sync.OnceValue(func() map[string]json.RawMessage {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	t := &sundial.Task{Name: "x", CronExpr: "* * * * * *", TargetURL: "http://x/"}
	if err := t.Normalize(now); err != nil {
		panic(fmt.Sprintf("api: the default task is not valid: %v", err))
	}
	raw, _ := json.Marshal(taskView(t, now))
	doc, _ := parseObject(raw)
	out := map[string]json.RawMessage{}
	for _, k := range doc.keys {
		out[k] = json.RawMessage(doc.vals[k])
	}
	for _, k := range []string{"name", "cron_expr", "run_at", "target_url"} {
		delete(out, k)
	}
	return out
})

// sameJSON reports whether v is def as JSON, or empty: "", null, {} or [].
func sameJSON(v, def []byte) bool {
	var a, b any
	if json.Unmarshal(v, &a) != nil {
		return false
	}
	switch x := a.(type) {
	case nil:
		return true
	case string:
		if x == "" {
			return true
		}
	case map[string]any:
		if len(x) == 0 {
			return true
		}
	case []any:
		if len(x) == 0 {
			return true
		}
	}
	if def == nil || json.Unmarshal(def, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// writeYAMLDoc writes the JSON object doc as one YAML document, in block
// style, its keys in order.
func writeYAMLDoc(b *bytes.Buffer, doc []byte) error {
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil { // JSON is YAML
		return err
	}
	blockStyle(&n)
	enc := yaml.NewEncoder(b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return err
	}
	return enc.Close()
}

// blockStyle drops the flow style and the quotes JSON's text gives the
// nodes: the encoder then writes block YAML, and quotes only what would
// read back as another type.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
