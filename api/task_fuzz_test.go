package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sundialhq/sundial"
)

// decodeTask is how POST /api/v1/tasks turns a body into a task, after the
// body is read: checkJSON, decodeStrict, then the request's own checks and
// the task's normalisation.
func decodeTask(raw []byte, now time.Time) (*sundial.Task, error) {
	if err := checkJSON(raw); err != nil {
		return nil, err
	}
	var req taskRequest
	if err := decodeStrict(raw, &req); err != nil {
		return nil, err
	}
	return req.task(nil, now, nil) // no secrets key: a task with a secret is refused, a client error
}

// jsonObjects are the JSON objects written in backquotes in the package's
// tests: bodies of requests, good and bad.
var jsonObjects = regexp.MustCompile("`(\\{[^`]*\\})`")

// FuzzTaskDecode: decoding a task body never panics, and refuses with a
// client error (*sundial.Error, not internal) that has a message. A task
// it accepts is normalised for good: normalising it again changes nothing;
// and it round-trips: its JSON, as GET shows it less the server-set
// fields, sent back as a body, is accepted and decodes to the same task
// (its params written compact, as JSON writes them).
// The corpus starts from every JSON object the package's tests write.
func FuzzTaskDecode(f *testing.F) {
	f.Add([]byte(seedCreateTask))
	f.Add([]byte(`{"name":"a","cron_expr":"*/5 * * * * *","target_url":"http://127.0.0.1:9/x","headers_json":"{\"X-A\":\"1\"}"}`))
	f.Add([]byte(`{"run_at":"2030-01-02T03:04:05.123456789+02:00","target_url":"https://example.com","params":{"a":[1,2,{"b":null}]},"body_template":"{{params.a.2}}"}`))
	f.Add([]byte(`{"delay_seconds":5,"target_url":"http://example.com","retry_policy":{"max_attempts":3},"exec_type":"async","status":"disabled"}`))
	f.Add([]byte(`{"name":"\ud800","name":"x"}`))
	files, _ := filepath.Glob("*_test.go")
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, m := range jsonObjects.FindAllSubmatch(src, -1) {
			f.Add(m[1])
		}
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		task, err := decodeTask(body, now)
		if err != nil {
			e, ok := errors.AsType[*sundial.Error](err)
			if !ok || e.Code == sundial.EInternal || e.Message == "" {
				t.Fatalf("refused with %#v (%T), want a client error with a message", err, err)
			}
			return
		}
		again := cloneTask(t, task)
		if err := again.Normalize(now); err != nil {
			t.Fatalf("normalising an accepted task again: %v", err)
		}
		if !reflect.DeepEqual(again, task) {
			t.Fatalf("normalising again changed the task:\n got %+v\nwant %+v", again, task)
		}

		shown, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(shown) {
			t.Fatalf("the task's JSON is not UTF-8: %q", shown)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(shown, &fields); err != nil {
			t.Fatal(err)
		}
		for _, k := range serverSet {
			delete(fields, k)
		}
		resent, _ := json.Marshal(fields)
		back, err := decodeTask(resent, now)
		if err != nil {
			t.Fatalf("the accepted task sent back is refused: %v\nbody %s", err, resent)
		}
		task.RequestHash, back.RequestHash = "", "" // of the request, which differs
		// JSON writes params compact: what they say is kept, not their spaces.
		task.Params, back.Params = compactJSON(t, task.Params), compactJSON(t, back.Params)
		if !reflect.DeepEqual(back, task) {
			t.Fatalf("round trip changed the task:\n got %+v\nwant %+v\nbody %s", back, task, resent)
		}
	})
}

func compactJSON(t *testing.T, raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("stored params %q are not JSON: %v", raw, err)
	}
	return b.Bytes()
}

// cloneTask is a deep copy of task, through its Go fields.
func cloneTask(t *testing.T, task *sundial.Task) *sundial.Task {
	c := *task
	c.Headers = make(map[string]string, len(task.Headers))
	for k, v := range task.Headers {
		c.Headers[k] = v
	}
	c.Params = append(json.RawMessage(nil), task.Params...)
	c.RetryPolicy = append(json.RawMessage(nil), task.RetryPolicy...)
	if task.RunAt != nil {
		at := *task.RunAt
		c.RunAt = &at
	}
	if task.DelaySeconds != nil {
		t.Fatal("a normalised task keeps delay_seconds")
	}
	return &c
}
