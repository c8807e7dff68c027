package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sundialhq/sundial"
)

func oneOffBody(change map[string]any) map[string]any {
	m := map[string]any{"target_url": "https://example.com/hook", "delay_seconds": 60}
	for k, v := range change {
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return m
}

func TestOneOffCreate(t *testing.T) {
	b := setupStore(t)
	rec := b.do(t, "POST", "/api/v1/tasks", oneOffBody(map[string]any{
		"request_id": "order-7-reminder", "biz_id": "order-7", "params": map[string]any{"order_id": 7}}))
	var got sundial.Task
	want(t, rec, http.StatusCreated, &got)
	runAt := b.now().Add(time.Minute)
	if got.RunAt == nil || !got.RunAt.Equal(runAt) || got.NextFireTime == nil || !got.NextFireTime.Equal(runAt) {
		t.Errorf("run_at %v, next_fire_time %v; want both %v", got.RunAt, got.NextFireTime, runAt)
	}
	if got.CronExpr != "" || got.RequestID != "order-7-reminder" || got.BizID != "order-7" ||
		string(got.Params) != `{"order_id":7}` || !strings.HasPrefix(got.Name, "once-") {
		t.Errorf("task %+v", got)
	}
	if strings.Contains(rec.Body.String(), "delay_seconds") || strings.Contains(rec.Body.String(), "request_hash") {
		t.Errorf("answer shows input-only fields: %s", rec.Body)
	}

	// The same request later (a client retry): the same task, 200, even
	// though delay_seconds now means another instant.
	b.setNow(b.now().Add(5 * time.Second))
	var again sundial.Task
	want(t, b.do(t, "POST", "/api/v1/tasks", oneOffBody(map[string]any{
		"request_id": "order-7-reminder", "biz_id": "order-7", "params": map[string]any{"order_id": 7}})), http.StatusOK, &again)
	if again.ID != got.ID || !again.RunAt.Equal(*got.RunAt) {
		t.Errorf("repeat answered task %d at %v, want task %d at %v", again.ID, again.RunAt, got.ID, got.RunAt)
	}
	// The same request_id with another body: 409, nothing changes.
	wantError(t, b.do(t, "POST", "/api/v1/tasks", oneOffBody(map[string]any{
		"request_id": "order-7-reminder", "biz_id": "order-7", "params": map[string]any{"order_id": 8}})),
		http.StatusConflict, errorDetail{Code: sundial.EConflict, Field: "request_id"})

	// biz_id filters the list.
	b.create(t, oneOffBody(map[string]any{"biz_id": "order-9"}))
	var list listResponse[*sundial.Task]
	want(t, b.do(t, "GET", "/api/v1/tasks?biz_id=order-7", nil), http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != got.ID {
		t.Errorf("biz_id=order-7 lists %d tasks, want task %d alone", len(list.Items), got.ID)
	}
}

func TestOneOffCreateInvalid(t *testing.T) {
	b := setupStore(t)
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"both delay and run_at", oneOffBody(map[string]any{"run_at": "2030-01-01T00:00:00Z"}), "delay_seconds"},
		{"cron and run_at", oneOffBody(map[string]any{"delay_seconds": nil, "run_at": "2030-01-01T00:00:00Z", "cron_expr": "* * * * *"}), "run_at"},
		{"neither", oneOffBody(map[string]any{"delay_seconds": nil, "name": "x"}), "cron_expr"},
		{"run_at not a time", oneOffBody(map[string]any{"delay_seconds": nil, "run_at": "tomorrow"}), "run_at"},
		{"negative delay", oneOffBody(map[string]any{"delay_seconds": -5}), "delay_seconds"},
		{"unknown template variable", oneOffBody(map[string]any{"body_template": "{{order}}"}), "body_template"},
		{"completed status", oneOffBody(map[string]any{"status": "COMPLETED"}), "status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := b.do(t, "POST", "/api/v1/tasks", c.body)
			if rec.Code != http.StatusBadRequest || errorOf(t, rec).Field != c.field {
				t.Errorf("status %d body %s; want 400 on field %q", rec.Code, rec.Body, c.field)
			}
		})
	}
	// The token quotes what was given, as it was given.
	rec := b.do(t, "POST", "/api/v1/tasks", oneOffBody(map[string]any{"delay_seconds": nil, "run_at": "tomorrow"}))
	if e := errorOf(t, rec); e.Token != "tomorrow" {
		t.Errorf("run_at not a time: token %q, want tomorrow", e.Token)
	}
	rec = b.do(t, "POST", "/api/v1/tasks", oneOffBody(map[string]any{"delay_seconds": nil, "run_at": 5}))
	if e := errorOf(t, rec); e.Field != "run_at" || e.Token != "5" {
		t.Errorf("run_at a number: field %q token %q, want run_at 5", e.Field, e.Token)
	}
	var list listResponse[*sundial.Task]
	want(t, b.do(t, "GET", "/api/v1/tasks", nil), http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Errorf("%d tasks after bad requests, want none", len(list.Items))
	}
}

// TestOneOffConcurrentIdempotent sends the same request 20 times at once:
// exactly one task is created and every answer is that task.
func TestOneOffConcurrentIdempotent(t *testing.T) {
	b := setupStore(t)
	body := oneOffBody(map[string]any{"request_id": "same", "params": map[string]any{"n": 1}})
	var wg sync.WaitGroup
	ids := make([]int64, 20)
	codes := make([]int, 20)
	for i := range ids {
		wg.Go(func() {
			rec := b.do(t, "POST", "/api/v1/tasks", body)
			codes[i] = rec.Code
			var tk sundial.Task
			if rec.Code < 300 {
				want(t, rec, rec.Code, &tk)
			}
			ids[i] = tk.ID
		})
	}
	wg.Wait()
	created := 0
	for i := range ids {
		if codes[i] == http.StatusCreated {
			created++
		} else if codes[i] != http.StatusOK {
			t.Errorf("request %d: status %d", i, codes[i])
		}
		if ids[i] != ids[0] {
			t.Errorf("request %d answered task %d, request 0 task %d", i, ids[i], ids[0])
		}
	}
	if created != 1 {
		t.Errorf("%d answers were 201, want exactly one", created)
	}
	var list listResponse[*sundial.Task]
	want(t, b.do(t, "GET", "/api/v1/tasks", nil), http.StatusOK, &list)
	if len(list.Items) != 1 {
		t.Errorf("%d tasks stored, want 1", len(list.Items))
	}
}

func TestTaskBatch(t *testing.T) {
	b := setupStore(t)
	existing := b.create(t, oneOffBody(map[string]any{"request_id": "r-0"}))
	var tasks []any
	tasks = append(tasks, oneOffBody(map[string]any{"request_id": "r-0"})) // already there
	for i := 1; i < 1000; i++ {
		tasks = append(tasks, oneOffBody(map[string]any{"request_id": fmt.Sprintf("r-%d", i),
			"params": map[string]any{"i": i}, "biz_id": "batch"}))
	}
	var resp batchResponse
	want(t, b.do(t, "POST", "/api/v1/tasks:batch", map[string]any{"tasks": tasks}), http.StatusOK, &resp)
	if len(resp.Items) != 1000 {
		t.Fatalf("%d results, want 1000", len(resp.Items))
	}
	if it := resp.Items[0]; it.Status != http.StatusOK || it.Task.ID != existing.ID {
		t.Errorf("item 0: %d task %+v, want 200 with task %d", it.Status, it.Task, existing.ID)
	}
	for i, it := range resp.Items[1:] {
		if it.Status != http.StatusCreated || it.Task == nil || it.Task.RequestID != fmt.Sprintf("r-%d", i+1) {
			t.Fatalf("item %d: %+v", i+1, it)
		}
	}
	var list listResponse[*sundial.Task]
	want(t, b.do(t, "GET", "/api/v1/tasks?biz_id=batch&limit=1000", nil), http.StatusOK, &list)
	if len(list.Items) != 999 {
		t.Errorf("%d tasks of the batch stored, want 999", len(list.Items))
	}

	// One bad item refuses the whole batch, naming it.
	rec := b.do(t, "POST", "/api/v1/tasks:batch", map[string]any{"tasks": []any{
		oneOffBody(map[string]any{"request_id": "new-1"}),
		oneOffBody(map[string]any{"delay_seconds": -1}),
		oneOffBody(map[string]any{"request_id": "r-5", "params": map[string]any{"i": 6}}), // conflicts
	}})
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
	}
	var refused struct {
		Error errorDetail  `json:"error"`
		Items []*batchItem `json:"items"`
	}
	want(t, rec, http.StatusBadRequest, &refused)
	if len(refused.Items) != 3 || refused.Items[0] != nil || refused.Items[1] == nil || refused.Items[2] != nil ||
		refused.Items[1].Status != http.StatusBadRequest || refused.Items[1].Error.Field != "tasks[1].delay_seconds" {
		t.Errorf("items %+v, want item 1 refused on tasks[1].delay_seconds, null for the others", refused.Items)
	}
	if refused.Error.Field != "tasks[1].delay_seconds" {
		t.Errorf("error %+v, want the first refused item's field", refused.Error)
	}
	// A conflict found by the store refuses the batch too, and nothing
	// of it is kept.
	rec = b.do(t, "POST", "/api/v1/tasks:batch", map[string]any{"tasks": []any{
		oneOffBody(map[string]any{"request_id": "new-1"}),
		oneOffBody(map[string]any{"request_id": "r-5", "params": map[string]any{"i": 6}}),
	}})
	want(t, rec, http.StatusConflict, &refused)
	if e := refused.Items[1].Error; e == nil || e.Field != "tasks[1].request_id" {
		t.Errorf("items %+v, want item 1 refused on tasks[1].request_id", refused.Items)
	}
	want(t, b.do(t, "GET", "/api/v1/tasks?limit=1000", nil), http.StatusOK, &list)
	if len(list.Items) != 1000 {
		t.Errorf("%d tasks after refused batches, want 1000", len(list.Items))
	}
	for _, body := range []string{`{}`, `{"tasks": []}`, `{"tasks": [{"bogus": 1}]}`} {
		if rec := b.do(t, "POST", "/api/v1/tasks:batch", body); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", body, rec.Code)
		}
	}
	tooMany := make([]any, 1001)
	for i := range tooMany {
		tooMany[i] = oneOffBody(nil)
	}
	if rec := b.do(t, "POST", "/api/v1/tasks:batch", map[string]any{"tasks": tooMany}); rec.Code != http.StatusBadRequest {
		t.Errorf("1001 tasks: status %d, want 400", rec.Code)
	}
}

func TestTaskUpcoming(t *testing.T) {
	b := setupStore(t)
	tk := b.create(t, task("every-minute", map[string]any{"cron_expr": "0 * * * * *"}))
	var up upcomingResponse
	want(t, b.do(t, "GET", taskPath(tk.ID, "/upcoming")+"?limit=3", nil), http.StatusOK, &up)
	if len(up.Runs) != 0 || len(up.Next) != 3 {
		t.Fatalf("upcoming %+v, want 3 computed fires", up)
	}
	for i, at := range up.Next {
		if want := b.now().Add(time.Duration(i+1) * time.Minute); !at.Equal(want) {
			t.Errorf("next[%d] = %s, want %s", i, at, want)
		}
	}
	// A planned run is listed first, and the computed ones follow it.
	r := &sundial.Run{TaskID: tk.ID, FireKey: sundial.ScheduledFireKey(*tk.NextFireTime), ScheduledTime: *tk.NextFireTime}
	if err := b.store.RunInsert(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	want(t, b.do(t, "GET", taskPath(tk.ID, "/upcoming")+"?limit=2", nil), http.StatusOK, &up)
	if len(up.Runs) != 1 || up.Runs[0].ID != r.ID || len(up.Next) != 1 {
		t.Errorf("upcoming %+v, want run %d then one computed fire", up, r.ID)
	}
	if rec := b.do(t, "GET", taskPath(tk.ID, "/upcoming")+"?limit=0", nil); rec.Code != http.StatusBadRequest {
		t.Errorf("limit=0: status %d, want 400", rec.Code)
	}
	if rec := b.do(t, "GET", taskPath(999, "/upcoming"), nil); rec.Code != http.StatusNotFound {
		t.Errorf("unknown task: status %d, want 404", rec.Code)
	}
}

// waitingRun makes a WAITING_CALLBACK run of an ASYNC task and returns it
// with its callback token.
func waitingRun(t *testing.T, b *storeBundle, method string) (*sundial.Run, string) {
	t.Helper()
	tk := b.create(t, task("async-"+method, map[string]any{"exec_type": "ASYNC", "callback_method": method}))
	ctx := context.Background()
	r := &sundial.Run{TaskID: tk.ID, FireKey: "s:1", ScheduledTime: b.now(), NodeID: "n1"}
	if err := b.store.RunInsert(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.RunStart(ctx, []sundial.RunStartParams{{ID: r.ID, Fence: r.Fence, Attempt: 1, StartedAt: b.now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.RunFinish(ctx, []sundial.RunFinishParams{{ID: r.ID, Fence: r.Fence, Status: sundial.RunWaitingCallback,
		StartedAt: b.now(), FinishedAt: b.now(), HTTPStatus: 202, DueAt: b.now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	return r, sundial.CallbackToken(b.sched.CallbackSecret(), r.ID, r.Fence)
}

func (b *storeBundle) callback(t *testing.T, method, path string, header map[string]string, body string) *http.Response {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	} else {
		rd = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)
	return rec.Result()
}

func TestRunCallback(t *testing.T) {
	b := setupStore(t)
	r, tok := waitingRun(t, b, "POST")
	path := fmt.Sprintf("/api/v1/runs/%d/callback", r.ID)
	ok := `{"status": "SUCCESS", "result": {"rows": 3}, "message": "done"}`

	for _, c := range []struct {
		name   string
		method string
		header map[string]string
		body   string
		status int
	}{
		{"no token", "POST", nil, ok, http.StatusUnauthorized},
		{"wrong token", "POST", map[string]string{"X-Sundial-Callback-Token": "v1.1.AAAA"}, ok, http.StatusUnauthorized},
		{"another run's token", "POST", map[string]string{"X-Sundial-Callback-Token": sundial.CallbackToken(b.sched.CallbackSecret(), r.ID+1, r.Fence)}, ok, http.StatusUnauthorized},
		{"wrong method", "PUT", map[string]string{"X-Sundial-Callback-Token": tok}, ok, http.StatusMethodNotAllowed},
		{"bad status", "POST", map[string]string{"X-Sundial-Callback-Token": tok}, `{"status": "DONE"}`, http.StatusBadRequest},
		{"unknown field", "POST", map[string]string{"X-Sundial-Callback-Token": tok}, `{"status": "SUCCESS", "x": 1}`, http.StatusBadRequest},
		{"superseded delivery", "POST", map[string]string{"X-Sundial-Callback-Token": sundial.CallbackToken(b.sched.CallbackSecret(), r.ID, r.Fence+1)}, ok, http.StatusConflict},
		{"fence with a leading zero", "POST", map[string]string{"X-Sundial-Callback-Token": strings.Replace(tok, fmt.Sprintf("v1.%d.", r.Fence), fmt.Sprintf("v1.0%d.", r.Fence), 1)}, ok, http.StatusUnauthorized},
		{"fence with a plus sign", "POST", map[string]string{"X-Sundial-Callback-Token": strings.Replace(tok, fmt.Sprintf("v1.%d.", r.Fence), fmt.Sprintf("v1.+%d.", r.Fence), 1)}, ok, http.StatusUnauthorized},
	} {
		resp := b.callback(t, c.method, path, c.header, c.body)
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
	if got, _ := b.store.RunGet(context.Background(), r.ID); got.Status != sundial.RunWaitingCallback {
		t.Fatalf("run %s after refused callbacks, want WAITING_CALLBACK", got.Status)
	}
	resp := b.callback(t, "POST", path, map[string]string{"Authorization": "Bearer " + tok}, ok)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: status %d", resp.StatusCode)
	}
	// The answer is the run: its message is the callback's, and a success
	// has no error.
	var answered map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&answered); err != nil {
		t.Fatal(err)
	}
	if answered["message"] != "done" || answered["error"] != nil {
		t.Errorf("callback answered message %v, error %v; want message done, no error", answered["message"], answered["error"])
	}
	got, _ := b.store.RunGet(context.Background(), r.ID)
	if got.Status != sundial.RunSuccess || string(got.Result) != `{"rows":3}` && string(got.Result) != `{"rows": 3}` {
		t.Errorf("run %s result %s", got.Status, got.Result)
	}
	if got.Message != "done" || got.Error != "" {
		t.Errorf("run after a SUCCESS callback: message %q, error %q; want done and none", got.Message, got.Error)
	}
	// A replay is 409 and changes nothing.
	if resp := b.callback(t, "POST", path, map[string]string{"X-Sundial-Callback-Token": tok}, `{"status": "FAILED"}`); resp.StatusCode != http.StatusConflict {
		t.Errorf("replay: status %d, want 409", resp.StatusCode)
	}
	if again, _ := b.store.RunGet(context.Background(), r.ID); again.Status != sundial.RunSuccess {
		t.Errorf("run %s after replay, want SUCCESS", again.Status)
	}
}

func TestRunCallbackGET(t *testing.T) {
	b := setupStore(t)
	r, tok := waitingRun(t, b, "GET")
	resp := b.callback(t, "GET", fmt.Sprintf("/api/v1/runs/%d/callback?status=FAILED&message=boom", r.ID),
		map[string]string{"X-Sundial-Callback-Token": tok}, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got, _ := b.store.RunGet(context.Background(), r.ID); got.Status != sundial.RunFailed || got.Error != "boom" ||
		got.Message != "boom" {
		t.Errorf("run %s error %q message %q, want FAILED with boom as both", got.Status, got.Error, got.Message)
	}
}

func TestRunProgress(t *testing.T) {
	b := setupStore(t)
	r, tok := waitingRun(t, b, "POST")
	path := fmt.Sprintf("/api/v1/runs/%d/progress", r.ID)
	h := map[string]string{"X-Sundial-Callback-Token": tok}
	if resp := b.callback(t, "POST", path, h, `{"progress": {"pct": 50}, "checkpoint": {"page": 7}}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("progress: status %d", resp.StatusCode)
	}
	got, _ := b.store.RunGet(context.Background(), r.ID)
	if string(got.Checkpoint) != `{"page": 7}` && string(got.Checkpoint) != `{"page":7}` {
		t.Errorf("checkpoint %s", got.Checkpoint)
	}
	for _, c := range []struct {
		name   string
		header map[string]string
		body   string
		status int
	}{
		{"empty", h, `{}`, http.StatusBadRequest},
		{"checkpoint too large", h, `{"checkpoint": "` + strings.Repeat("x", sundial.MaxCheckpointLen) + `"}`, http.StatusBadRequest},
		{"no token", nil, `{"progress": 1}`, http.StatusUnauthorized},
	} {
		if resp := b.callback(t, "POST", path, c.header, c.body); resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
}
