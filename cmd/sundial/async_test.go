package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// End-to-end tests of ASYNC tasks (callbacks, progress, checkpoints),
// retry policies and one-off tasks, against real "sundial serve" nodes and
// a loopback target.

// asyncCall is one delivery an asyncTarget received.
type asyncCall struct {
	at         time.Time
	runID      int64
	taskID     string
	node       string
	delivery   string
	key        string
	cbURL      string
	token      string
	checkpoint string
	hasCP      bool // X-Sundial-Checkpoint was sent at all
	body       string
}

// asyncTarget is a loopback target for ASYNC tasks: it records each
// delivery and answers 202 (the work is taken), unless hold says to keep
// the call open until the caller goes away.
type asyncTarget struct {
	srv   *httptest.Server
	calls chan asyncCall
	hold  func(asyncCall) bool
}

func newAsyncTarget(t *testing.T, hold func(asyncCall) bool) *asyncTarget {
	t.Helper()
	a := &asyncTarget{calls: make(chan asyncCall, 100), hold: hold}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, _ := strconv.ParseInt(r.Header.Get("X-Sundial-Run-Id"), 10, 64)
		cp, hasCP := r.Header["X-Sundial-Checkpoint"]
		c := asyncCall{at: time.Now(), runID: id, taskID: r.Header.Get("X-Sundial-Task-Id"),
			node: r.Header.Get("X-Sundial-Node"), delivery: r.Header.Get("X-Sundial-Delivery"),
			key: r.Header.Get("Idempotency-Key"), cbURL: r.Header.Get("X-Sundial-Callback-Url"),
			token: r.Header.Get("X-Sundial-Callback-Token"), hasCP: hasCP, body: string(body)}
		if hasCP {
			c.checkpoint = cp[0]
		}
		a.calls <- c
		if a.hold != nil && a.hold(c) {
			// Held open until the caller is gone (killed), bounded.
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Minute):
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"accepted":true}`)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// next returns the next delivery, failing after timeout.
func (a *asyncTarget) next(t *testing.T, timeout time.Duration) asyncCall {
	t.Helper()
	select {
	case c := <-a.calls:
		return c
	case <-time.After(timeout):
		t.Fatalf("no delivery reached the target within %s", timeout)
		return asyncCall{}
	}
}

// none checks that no further delivery arrives within d.
func (a *asyncTarget) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case c := <-a.calls:
		t.Errorf("unexpected delivery %s of run %d", c.delivery, c.runID)
	case <-time.After(d):
	}
}

// asyncSend makes a request the way a target reports back and returns the
// status and body. auth is "header" (X-Sundial-Callback-Token), "bearer"
// (Authorization: Bearer) or "" (no token).
func asyncSend(t *testing.T, method, u, auth, token, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch auth {
	case "header":
		req.Header.Set("X-Sundial-Callback-Token", token)
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

// asyncExpect makes the request and fails unless it is answered with want;
// for an error it also checks the error code (and field, when given).
func asyncExpect(t *testing.T, what string, want int, code, field string, method, u, auth, token, body string) []byte {
	t.Helper()
	got, _, data := asyncSend(t, method, u, auth, token, body)
	if got != want {
		t.Fatalf("%s: %s %s = %d %s, want %d", what, method, u, got, data, want)
	}
	if code != "" {
		var e struct {
			Error struct {
				Code  string `json:"code"`
				Field string `json:"field"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &e); err != nil || e.Error.Code != code || (field != "" && e.Error.Field != field) {
			t.Errorf("%s: error body %s, want code %q field %q", what, data, code, field)
		}
	}
	return data
}

type asyncAttempt struct {
	Delivery int    `json:"delivery"`
	NodeID   string `json:"node_id"`
	Status   string `json:"status"`
	Error    string `json:"error"`
}

// asyncRun is GET /api/v1/runs/{id}.
type asyncRun struct {
	ID             int64           `json:"id"`
	TaskID         int64           `json:"task_id"`
	Status         string          `json:"status"`
	Deliveries     int             `json:"deliveries"`
	NodeID         string          `json:"node_id"`
	Fence          int64           `json:"fence"`
	DueAt          time.Time       `json:"due_at"`
	HTTPStatus     int             `json:"http_status"`
	ResponseBody   string          `json:"response_body"`
	Error          string          `json:"error"`
	Message        string          `json:"message"`
	Result         json.RawMessage `json:"result"`
	Progress       json.RawMessage `json:"progress"`
	Checkpoint     json.RawMessage `json:"checkpoint"`
	IdempotencyKey string          `json:"idempotency_key"`
	Attempts       []asyncAttempt  `json:"attempts"`
}

// asyncTask is the part of a task these tests look at.
type asyncTask struct {
	ID              int64      `json:"id"`
	CronExpr        string     `json:"cron_expr"`
	ExecType        string     `json:"exec_type"`
	RunAt           *time.Time `json:"run_at"`
	CallbackMethod  string     `json:"callback_method"`
	CallbackTimeout int        `json:"callback_timeout_sec"`
	Status          string     `json:"status"`
}

func asyncGetRun(t *testing.T, n *node, id int64) asyncRun {
	t.Helper()
	var r asyncRun
	n.do(t, "GET", fmt.Sprintf("/api/v1/runs/%d", id), "", 200, &r)
	return r
}

// asyncWaitRun polls run id until ok accepts it, for at most timeout.
func asyncWaitRun(t *testing.T, n *node, id int64, what string, timeout time.Duration, ok func(asyncRun) bool) asyncRun {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := asyncGetRun(t, n, id)
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %s for %s; run: %+v", timeout, what, r)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// asyncWaitTask polls task id until its status is want, for at most timeout.
func asyncWaitTask(t *testing.T, n *node, id int64, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var task asyncTask
		n.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", id), "", 200, &task)
		if task.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d is %s after %s, want %s", id, task.Status, timeout, want)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// asyncTemplate renders every callback variable into the body.
const asyncTemplate = `{"cb":"{{callback_url}}","tok":"{{callback_token}}","cp":{{checkpoint}},"key":"{{idempotency_key}}"}`

// asyncCreate creates a one-off ASYNC task due in one second.
func asyncCreate(t *testing.T, n *node, target, extra string) asyncTask {
	t.Helper()
	return asyncCreateAt(t, n, `"delay_seconds":1`, target, extra)
}

// asyncCreateAt creates a one-off ASYNC task due when says (delay_seconds
// or run_at), within the next three seconds.
func asyncCreateAt(t *testing.T, n *node, when, target, extra string) asyncTask {
	t.Helper()
	var task asyncTask
	before := time.Now()
	n.do(t, "POST", "/api/v1/tasks", fmt.Sprintf(`{"name":%q,"exec_type":"ASYNC",%s,
		"http_method":"POST","target_url":%q,"body_template":%q,"timeout_seconds":30%s}`,
		randomName("async-"), when, target, asyncTemplate, extra), 201, &task)
	if task.CronExpr != "" || task.ExecType != "ASYNC" || task.RunAt == nil ||
		task.RunAt.Before(before.Truncate(time.Second)) || task.RunAt.After(time.Now().Add(3*time.Second)) {
		t.Fatalf("created one-off task %+v, want ASYNC with run_at in the next seconds after %s", task, before)
	}
	return task
}

// checkBody checks that the rendered body carries the delivery's callback
// URL, token, idempotency key and checkpoint (JSON null for none).
func checkBody(t *testing.T, c asyncCall, checkpoint string) {
	t.Helper()
	var b struct {
		CB  string          `json:"cb"`
		Tok string          `json:"tok"`
		CP  json.RawMessage `json:"cp"`
		Key string          `json:"key"`
	}
	if err := json.Unmarshal([]byte(c.body), &b); err != nil {
		t.Fatalf("delivery body %q is not the rendered JSON template: %v", c.body, err)
	}
	if b.CB != c.cbURL || b.Tok != c.token || b.Key != c.key {
		t.Errorf("body %s: want callback_url %q, callback_token %q, idempotency_key %q as in the headers", c.body, c.cbURL, c.token, c.key)
	}
	if !jsonEqual(b.CP, []byte(checkpoint)) {
		t.Errorf("body {{checkpoint}} = %s, want %s", b.CP, checkpoint)
	}
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// progressURL is the progress endpoint next to a callback URL.
func progressURL(cbURL string) string {
	return strings.TrimSuffix(cbURL, "/callback") + "/progress"
}

func TestAsyncCallbackE2E(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"))

	t.Run("callback", func(t *testing.T) {
		t.Parallel()
		tgt := newAsyncTarget(t, nil)
		task := asyncCreate(t, n, tgt.srv.URL+"/work", "")
		if task.CallbackMethod != "POST" {
			t.Errorf("callback_method %q, want the default POST", task.CallbackMethod)
		}
		c := tgt.next(t, 10*time.Second)
		wantURL := fmt.Sprintf("%s/api/v1/runs/%d/callback", n.url, c.runID)
		if c.cbURL != wantURL {
			t.Errorf("X-Sundial-Callback-Url %q, want %q (http://<listen addr>)", c.cbURL, wantURL)
		}
		if !strings.HasPrefix(c.token, "v1.") || c.delivery != "1" || c.hasCP || c.taskID != strconv.FormatInt(task.ID, 10) {
			t.Errorf("first delivery: token %q, delivery %q, checkpoint %v %q, task %q", c.token, c.delivery, c.hasCP, c.checkpoint, c.taskID)
		}
		checkBody(t, c, "null")

		// The 202 leaves the run waiting for its callback.
		asyncWaitRun(t, n, c.runID, "WAITING_CALLBACK", 10*time.Second, func(r asyncRun) bool {
			return r.Status == "WAITING_CALLBACK"
		})

		done := `{"status":"SUCCESS","result":{"rows":42,"files":["a","b"]},"message":"all done"}`
		asyncExpect(t, "no token", 401, "unauthorized", "", "POST", c.cbURL, "", "", done)
		bad := c.token[:len(c.token)-4] + "AAAA"
		if bad == c.token {
			bad = c.token[:len(c.token)-4] + "BBBB"
		}
		asyncExpect(t, "wrong token", 401, "unauthorized", "", "POST", c.cbURL, "header", bad, done)
		asyncExpect(t, "wrong bearer token", 401, "unauthorized", "", "POST", c.cbURL, "bearer", "nonsense", done)
		// A token is bound to its run: the same token on another run's URL.
		other := fmt.Sprintf("%s/api/v1/runs/%d/callback", n.url, c.runID+1000)
		asyncExpect(t, "token of another run", 401, "unauthorized", "", "POST", other, "header", c.token, done)
		status, hdr, data := asyncSend(t, "PUT", c.cbURL, "header", c.token, done)
		if status != 405 || hdr.Get("Allow") != "POST" {
			t.Errorf("PUT callback = %d (Allow %q) %s, want 405 allowing POST", status, hdr.Get("Allow"), data)
		}
		if r := asyncGetRun(t, n, c.runID); r.Status != "WAITING_CALLBACK" {
			t.Fatalf("after refused callbacks the run is %s, want WAITING_CALLBACK", r.Status)
		}

		data = asyncExpect(t, "success callback", 200, "", "", "POST", c.cbURL, "bearer", c.token, done)
		var answered asyncRun
		if err := json.Unmarshal(data, &answered); err != nil || answered.ID != c.runID || answered.Status != "SUCCESS" ||
			answered.Message != "all done" || answered.Error != "" {
			t.Errorf("callback answered %s, want run %d SUCCESS with the message and no error", data, c.runID)
		}
		r := asyncGetRun(t, n, c.runID)
		if r.Status != "SUCCESS" || !jsonEqual(r.Result, []byte(`{"rows":42,"files":["a","b"]}`)) ||
			len(r.Attempts) != 1 || r.Attempts[0].Status != "SUCCESS" || r.Attempts[0].Delivery != 1 ||
			r.Attempts[0].Error != "" {
			t.Errorf("run after the callback: %+v, want SUCCESS with the result and one SUCCESS attempt", r)
		}
		// A success's message is the run's message, not an error.
		if r.Message != "all done" || r.Error != "" {
			t.Errorf("run after the callback: message %q, error %q; want \"all done\" and no error", r.Message, r.Error)
		}
		asyncWaitTask(t, n, task.ID, "COMPLETED", 5*time.Second)

		// Replays are refused and change nothing.
		asyncExpect(t, "replayed callback", 409, "conflict", "status", "POST", c.cbURL, "header", c.token, done)
		asyncExpect(t, "FAILED after SUCCESS", 409, "conflict", "status", "POST", c.cbURL, "header", c.token,
			`{"status":"FAILED","message":"late"}`)
		asyncExpect(t, "progress after the end", 409, "conflict", "status", "POST", progressURL(c.cbURL), "header", c.token,
			`{"progress":{"pct":100}}`)
		if r := asyncGetRun(t, n, c.runID); r.Status != "SUCCESS" || !jsonEqual(r.Result, []byte(`{"rows":42,"files":["a","b"]}`)) || len(r.Attempts) != 1 {
			t.Errorf("run after replays: %+v", r)
		}
		tgt.none(t, 500*time.Millisecond)
	})

	t.Run("callback timeout", func(t *testing.T) {
		t.Parallel()
		tgt := newAsyncTarget(t, nil)
		task := asyncCreate(t, n, tgt.srv.URL, `,"callback_timeout_sec":2`)
		c := tgt.next(t, 10*time.Second)
		asyncWaitRun(t, n, c.runID, "WAITING_CALLBACK", 10*time.Second, func(r asyncRun) bool {
			return r.Status == "WAITING_CALLBACK"
		})
		waiting := time.Now()
		r := asyncWaitRun(t, n, c.runID, "FAILED_TIMEOUT", 10*time.Second, func(r asyncRun) bool {
			return r.Status != "WAITING_CALLBACK"
		})
		if r.Status != "FAILED_TIMEOUT" || len(r.Attempts) != 1 || r.Attempts[0].Status != "FAILED_TIMEOUT" {
			t.Fatalf("run without a callback: %+v, want FAILED_TIMEOUT with one FAILED_TIMEOUT attempt", r)
		}
		if d := time.Since(waiting); d < time.Second {
			t.Errorf("FAILED_TIMEOUT %s after WAITING_CALLBACK, want the 2s callback timeout", d)
		}
		asyncWaitTask(t, n, task.ID, "FAILED", 5*time.Second)
		// A callback after the deadline is too late.
		asyncExpect(t, "late callback", 409, "conflict", "status", "POST", c.cbURL, "header", c.token, `{"status":"SUCCESS"}`)
		tgt.none(t, 500*time.Millisecond) // no retry policy: delivered once
	})

	t.Run("progress extends the deadline", func(t *testing.T) {
		t.Parallel()
		tgt := newAsyncTarget(t, nil)
		task := asyncCreate(t, n, tgt.srv.URL, `,"callback_timeout_sec":2`)
		c := tgt.next(t, 10*time.Second)
		first := asyncWaitRun(t, n, c.runID, "WAITING_CALLBACK", 10*time.Second, func(r asyncRun) bool {
			return r.Status == "WAITING_CALLBACK"
		})
		// Report every 600ms for 5s, well past the first 2s deadline.
		end := time.Now().Add(5 * time.Second)
		for i := 1; time.Now().Before(end); i++ {
			asyncExpect(t, "progress", 200, "", "", "POST", progressURL(c.cbURL), "header", c.token,
				fmt.Sprintf(`{"progress":{"done":%d},"checkpoint":{"offset":%d}}`, i, i*100))
			time.Sleep(600 * time.Millisecond)
		}
		r := asyncGetRun(t, n, c.runID)
		if r.Status != "WAITING_CALLBACK" || !r.DueAt.After(first.DueAt.Add(2*time.Second)) {
			t.Fatalf("after 5s of progress reports: %+v (first deadline %s), want WAITING_CALLBACK with a later deadline",
				r, first.DueAt)
		}
		if len(r.Progress) == 0 || len(r.Checkpoint) == 0 {
			t.Errorf("progress %s and checkpoint %s not saved", r.Progress, r.Checkpoint)
		}
		asyncExpect(t, "callback", 200, "", "", "POST", c.cbURL, "header", c.token, `{"status":"SUCCESS"}`)
		asyncWaitTask(t, n, task.ID, "COMPLETED", 5*time.Second)
	})

	t.Run("retry supersedes the first token", func(t *testing.T) {
		t.Parallel()
		tgt := newAsyncTarget(t, nil)
		task := asyncCreate(t, n, tgt.srv.URL, `,"retry_policy":{"max_attempts":2,"initial_backoff":"200ms",
			"max_backoff":"1s","multiplier":2,"jitter":"none","retry_on":["callback_failed"]}`)
		c1 := tgt.next(t, 10*time.Second)
		asyncWaitRun(t, n, c1.runID, "WAITING_CALLBACK", 10*time.Second, func(r asyncRun) bool {
			return r.Status == "WAITING_CALLBACK"
		})
		// The target saves a checkpoint, then reports failure.
		asyncExpect(t, "progress", 200, "", "", "POST", progressURL(c1.cbURL), "header", c1.token,
			`{"progress":{"pct":70}, "checkpoint": {"page": 7, "cursor": "x y"}}`)
		data := asyncExpect(t, "FAILED callback", 200, "", "", "POST", c1.cbURL, "header", c1.token,
			`{"status":"FAILED","message":"upstream down","result":{"code":"E42"}}`)
		// Waiting for its retry, the run shows the failure: the message
		// explains it, as the message and as the error.
		var failed asyncRun
		if err := json.Unmarshal(data, &failed); err != nil || failed.Status != "SCHEDULED" ||
			failed.Message != "upstream down" || failed.Error != "upstream down" {
			t.Errorf("FAILED callback answered %s, want the run SCHEDULED for its retry with message and error \"upstream down\"", data)
		}

		c2 := tgt.next(t, 10*time.Second)
		if c2.runID != c1.runID || c2.key != c1.key || c2.delivery != "2" || c2.token == c1.token || c2.cbURL != c1.cbURL {
			t.Errorf("retry: run %d key %q delivery %q, want run %d key %q delivery 2 with a new token",
				c2.runID, c2.key, c2.delivery, c1.runID, c1.key)
		}
		if c2.checkpoint != `{"page":7,"cursor":"x y"}` {
			t.Errorf("retry: X-Sundial-Checkpoint %q, want the saved checkpoint as compact JSON", c2.checkpoint)
		}
		checkBody(t, c2, `{"page":7,"cursor":"x y"}`)
		if gap := c2.at.Sub(c1.at); gap < 200*time.Millisecond {
			t.Errorf("retry %s after the first delivery, want the 200ms backoff", gap)
		}

		// The first delivery's token is superseded, for callbacks and
		// progress reports alike.
		asyncExpect(t, "first token after the retry", 409, "conflict", "fence", "POST", c1.cbURL, "header", c1.token,
			`{"status":"SUCCESS"}`)
		asyncExpect(t, "first token progress", 409, "conflict", "fence", "POST", progressURL(c1.cbURL), "header", c1.token,
			`{"checkpoint":{"page":1}}`)
		asyncWaitRun(t, n, c2.runID, "WAITING_CALLBACK again", 10*time.Second, func(r asyncRun) bool {
			return r.Status == "WAITING_CALLBACK"
		})
		asyncExpect(t, "SUCCESS callback", 200, "", "", "POST", c2.cbURL, "header", c2.token,
			`{"status":"SUCCESS","result":{"pages":9}}`)
		r := asyncGetRun(t, n, c2.runID)
		if r.Status != "SUCCESS" || r.Deliveries != 2 || !jsonEqual(r.Result, []byte(`{"pages":9}`)) ||
			len(r.Attempts) != 2 || r.Attempts[0].Status != "FAILED" || r.Attempts[1].Status != "SUCCESS" ||
			r.Attempts[0].Delivery != 1 || r.Attempts[1].Delivery != 2 {
			t.Errorf("run after the retry: %+v, want SUCCESS, 2 deliveries, attempts FAILED then SUCCESS", r)
		}
		asyncWaitTask(t, n, task.ID, "COMPLETED", 5*time.Second)
		tgt.none(t, 500*time.Millisecond)
	})

	t.Run("retries used up", func(t *testing.T) {
		t.Parallel()
		tgt := newAsyncTarget(t, nil)
		task := asyncCreate(t, n, tgt.srv.URL, `,"callback_timeout_sec":1,"retry_policy":{"max_attempts":2,
			"initial_backoff":"100ms","jitter":"equal"}`)
		c1 := tgt.next(t, 10*time.Second)
		// No callback: the deadline counts as a timeout, retried by default.
		c2 := tgt.next(t, 10*time.Second)
		if c2.runID != c1.runID || c2.delivery != "2" || c2.key != c1.key {
			t.Errorf("second delivery %+v, want delivery 2 of run %d", c2, c1.runID)
		}
		r := asyncWaitRun(t, n, c1.runID, "the final FAILED_TIMEOUT", 10*time.Second, func(r asyncRun) bool {
			return r.Status == "FAILED_TIMEOUT"
		})
		if len(r.Attempts) != 2 || r.Attempts[0].Status != "FAILED_TIMEOUT" || r.Attempts[1].Status != "FAILED_TIMEOUT" {
			t.Errorf("attempts %+v, want two FAILED_TIMEOUT", r.Attempts)
		}
		asyncWaitTask(t, n, task.ID, "FAILED", 5*time.Second)
		tgt.none(t, 500*time.Millisecond)
	})
}

// TestAsyncCallbackBaseURL sets callback.base_url to a proxy in front of
// the node (as a load balancer would be): deliveries name it, and a
// callback through it lands. The task is one-off by run_at and calls back
// with PUT (callback_method).
func TestAsyncCallbackBaseURL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	var mu sync.Mutex
	var backend *url.URL
	var proxied int
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		to := backend
		proxied++
		mu.Unlock()
		if to == nil {
			http.Error(w, "no backend yet", http.StatusBadGateway)
			return
		}
		httputil.NewSingleHostReverseProxy(to).ServeHTTP(w, r)
	}))
	defer lb.Close()
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"), "--callback.base_url", lb.URL+"/")
	u, err := url.Parse(n.url)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	backend = u
	mu.Unlock()

	tgt := newAsyncTarget(t, nil)
	runAt := time.Now().Add(2 * time.Second).Truncate(time.Second)
	task := asyncCreateAt(t, n, fmt.Sprintf(`"run_at":%q`, runAt.Format(time.RFC3339)), tgt.srv.URL, `,"callback_method":"PUT"`)
	if !task.RunAt.Equal(runAt) {
		t.Errorf("run_at %s, want %s", task.RunAt, runAt)
	}
	c := tgt.next(t, 10*time.Second)
	if c.at.Before(runAt) {
		t.Errorf("delivered at %s, before run_at %s", c.at, runAt)
	}
	if want := fmt.Sprintf("%s/api/v1/runs/%d/callback", lb.URL, c.runID); c.cbURL != want {
		t.Fatalf("X-Sundial-Callback-Url %q, want %q (callback.base_url)", c.cbURL, want)
	}
	checkBody(t, c, "null")
	status, hdr, data := asyncSend(t, "POST", c.cbURL, "header", c.token, `{"status":"SUCCESS"}`)
	if status != 405 || hdr.Get("Allow") != "PUT" {
		t.Errorf("POST to a PUT callback = %d (Allow %q) %s, want 405 allowing PUT", status, hdr.Get("Allow"), data)
	}
	asyncExpect(t, "PUT callback through the proxy", 200, "", "", "PUT", c.cbURL, "bearer", c.token, `{"status":"SUCCESS"}`)
	asyncWaitTask(t, n, task.ID, "COMPLETED", 5*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if proxied < 2 {
		t.Errorf("the proxy saw %d requests, want the callbacks to go through it", proxied)
	}
}

// TestCheckpointResumeAfterKill runs two real nodes on PostgreSQL. The
// node that delivers an ASYNC run is killed (SIGKILL) in the middle of the
// call, after the target saved a checkpoint; the other node declares it
// dead and delivers the run again, with the same Idempotency-Key and the
// checkpoint.
func TestCheckpointResumeAfterKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("cluster test")
	}
	db := freshPostgres(t)
	bin := sundialBinary(t)
	flags := []string{"--scheduler.heartbeat_interval", "500ms", "--scheduler.dead_after", "2s"}
	procs := []*proc{startProc(t, bin, db, append([]string{"--log.level", "info"}, flags...)...), startProc(t, bin, db, append([]string{"--log.level", "info"}, flags...)...)}
	defer func() {
		if t.Failed() {
			for _, p := range procs {
				t.Logf("node %s output:\n%s", p.nodeID(), tail(p.out.String(), 40))
			}
		}
	}()
	byID := map[string]*proc{}
	for _, p := range procs {
		id := p.nodeID()
		if id == "" {
			t.Fatalf("no node ID in the output:\n%s", p.out)
		}
		byID[id] = p
	}

	// The first delivery is held open; later ones are answered 202.
	tgt := newAsyncTarget(t, func(c asyncCall) bool { return c.delivery == "1" })
	task := asyncCreate(t, &node{url: procs[0].url}, tgt.srv.URL, `,"callback_timeout_sec":60`)

	c1 := tgt.next(t, 15*time.Second)
	victim, ok := byID[c1.node]
	if !ok || c1.delivery != "1" || c1.hasCP {
		t.Fatalf("first delivery from node %q (known: %v), delivery %q, checkpoint %q", c1.node, byID, c1.delivery, c1.checkpoint)
	}
	checkBody(t, c1, "null")
	var survivor *proc
	for _, p := range procs {
		if p != victim {
			survivor = p
		}
	}
	if want := fmt.Sprintf("%s/api/v1/runs/%d/callback", victim.url, c1.runID); c1.cbURL != want {
		t.Errorf("X-Sundial-Callback-Url %q, want the calling node's %q", c1.cbURL, want)
	}
	// The target reports progress while still holding the call.
	data := asyncExpect(t, "progress while the call is held", 200, "", "", "POST", progressURL(c1.cbURL), "header", c1.token,
		`{"progress": {"pages_done": 3, "of": 10}, "checkpoint": {"page": 3}}`)
	var saved asyncRun
	if err := json.Unmarshal(data, &saved); err != nil || saved.Status != "RUNNING" || !jsonEqual(saved.Checkpoint, []byte(`{"page":3}`)) {
		t.Errorf("progress answered %s, want the RUNNING run with checkpoint {\"page\":3}", data)
	}

	killed := time.Now()
	victim.kill()
	t.Logf("killed %s, which held run %d", c1.node, c1.runID)

	sn := &node{url: survivor.url}
	c2 := tgt.next(t, 20*time.Second)
	t.Logf("delivered again %s after the kill", c2.at.Sub(killed).Round(time.Millisecond))
	if c2.runID != c1.runID || c2.key != c1.key || c2.delivery != "2" {
		t.Errorf("second delivery: run %d key %q delivery %q, want run %d key %q delivery 2",
			c2.runID, c2.key, c2.delivery, c1.runID, c1.key)
	}
	if c2.node != survivor.nodeID() {
		t.Errorf("second delivery by %q, want the survivor %q", c2.node, survivor.nodeID())
	}
	if c2.checkpoint != `{"page":3}` {
		t.Errorf("second delivery X-Sundial-Checkpoint %q (sent: %v), want {\"page\":3}", c2.checkpoint, c2.hasCP)
	}
	checkBody(t, c2, `{"page":3}`)
	if want := fmt.Sprintf("%s/api/v1/runs/%d/callback", survivor.url, c2.runID); c2.cbURL != want || c2.token == c1.token {
		t.Errorf("second delivery callback URL %q token %q, want %q and a new token", c2.cbURL, c2.token, want)
	}

	asyncWaitRun(t, sn, c2.runID, "WAITING_CALLBACK", 10*time.Second, func(r asyncRun) bool {
		return r.Status == "WAITING_CALLBACK"
	})
	// The killed delivery's token no longer counts, on the survivor either.
	asyncExpect(t, "token of the killed delivery", 409, "conflict", "fence", "POST",
		fmt.Sprintf("%s/api/v1/runs/%d/callback", survivor.url, c1.runID), "header", c1.token, `{"status":"SUCCESS"}`)
	asyncExpect(t, "SUCCESS callback", 200, "", "", "POST", c2.cbURL, "header", c2.token,
		`{"status":"SUCCESS","result":{"pages":10}}`)

	r := asyncGetRun(t, sn, c2.runID)
	if r.Status != "SUCCESS" || r.Deliveries != 2 || len(r.Attempts) != 2 ||
		r.Attempts[0].Status != "INTERRUPTED" || r.Attempts[0].NodeID != c1.node ||
		r.Attempts[1].Status != "SUCCESS" || r.Attempts[1].NodeID != c2.node ||
		!jsonEqual(r.Checkpoint, []byte(`{"page":3}`)) || !jsonEqual(r.Result, []byte(`{"pages":10}`)) {
		t.Errorf("run after the takeover: %+v\nwant SUCCESS, 2 deliveries, attempts INTERRUPTED (%s) then SUCCESS (%s)",
			r, c1.node, c2.node)
	}
	asyncWaitTask(t, sn, task.ID, "COMPLETED", 5*time.Second)
	tgt.none(t, time.Second)
	survivor.stop(t)
}
