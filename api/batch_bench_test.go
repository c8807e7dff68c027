package api

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkBatchDecode reads a batch of 1,000 one-off tasks as
// POST /api/v1/tasks:batch does, checks and all (JSON faults, exact keys,
// validation), without the store: the API's CPU per task created.
//
//	go test -run XXX -bench BatchDecode -benchmem ./api/
func BenchmarkBatchDecode(b *testing.B) {
	items := make([]string, 1000)
	for i := range items {
		items[i] = fmt.Sprintf(`{"name":"burst-%d","run_at":"2030-01-01T00:00:00Z",`+
			`"target_url":"http://127.0.0.1:9000/x","http_method":"POST","request_id":"burst-%d"}`, i, i)
	}
	raw := []byte(`{"tasks":[` + strings.Join(items, ",") + `]}`)
	now := time.Now()
	for b.Loop() {
		if err := checkJSON(raw); err != nil {
			b.Fatal(err)
		}
		var req batchRequest
		if err := decodeStrict(raw, &req); err != nil {
			b.Fatal(err)
		}
		for i, item := range req.Tasks {
			if _, _, err := (&Server{}).batchTask(b.Context(), item, now, "anonymous"); err != nil {
				b.Fatal(i, err)
			}
		}
	}
}
