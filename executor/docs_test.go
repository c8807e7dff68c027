package executor

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDocumentedHeaders: the header table of docs/api.md ("What a target
// receives") lists exactly the headers a delivery carries besides the
// task's own and Content-Length.
func TestDocumentedHeaders(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "### What a target receives")
	if start < 0 {
		t.Fatal(`docs/api.md has no "What a target receives" section`)
	}
	section = section[start:]
	section = section[:strings.Index(section, "\n### ")]
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z-]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, http.CanonicalHeaderKey(m[1]))
	}
	slices.Sort(documented)

	// A delivery with every optional header: an ASYNC run with a
	// checkpoint and a body.
	handler, got := recorder()
	e, srv := setup(t, handler)
	req := testRequest(srv.URL)
	req.Vars.NodeID = "node-1"
	req.Vars.Checkpoint = json.RawMessage(`{"page": 3}`)
	req.Headers = map[string]string{"X-Task-Own": "kept"}
	if out := e.Deliver(t.Context(), req); out.Status != StatusSuccess {
		t.Fatalf("Deliver = {%s %q}", out.Status, out.Error)
	}
	var sent []string
	for name := range receive(t, got).header {
		if name != "X-Task-Own" && name != "Content-Length" {
			sent = append(sent, name)
		}
	}
	slices.Sort(sent)
	if !slices.Equal(documented, sent) {
		t.Errorf("docs/api.md lists the headers\n  %q\na delivery carries\n  %q", documented, sent)
	}
}

// TestDeliverRedirects holds the executor to what docs/api.md says of
// redirects: a chain of up to 9 is followed, the final answer decides; 301-303 turn a
// POST into a GET without a body, 307 and 308 keep both; the Sundial
// headers go with every hop; a 3xx that is not followed is FAILED.
func TestDeliverRedirects(t *testing.T) {
	t.Parallel()
	type hop struct {
		method, body, runID, contentType string
	}
	hops := make(chan hop, 100)
	mux := http.NewServeMux()
	for _, code := range []int{301, 302, 303, 307, 308} {
		mux.HandleFunc("/r"+strconv.Itoa(code), func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/final", code)
		})
	}
	mux.HandleFunc("/final", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hops <- hop{r.Method, string(body), r.Header.Get("X-Sundial-Run-Id"), r.Header.Get("Content-Type")}
		io.WriteString(w, "final")
	})
	mux.HandleFunc("/no-location", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	// /chain/N redirects to /chain/N-1; /chain/0 answers.
	mux.HandleFunc("/chain/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "end of the chain")
			return
		}
		http.Redirect(w, r, "/chain/"+strconv.Itoa(n-1), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e := New(Options{})
	t.Cleanup(e.Close)

	for _, tt := range []struct {
		code    int
		wantHop hop
	}{
		{301, hop{"GET", "", "42", ""}},
		{302, hop{"GET", "", "42", ""}},
		{303, hop{"GET", "", "42", ""}},
		{307, hop{"POST", `{"run_id":"42"}`, "42", "application/json"}},
		{308, hop{"POST", `{"run_id":"42"}`, "42", "application/json"}},
	} {
		out := e.Deliver(t.Context(), testRequest(srv.URL+"/r"+strconv.Itoa(tt.code)))
		if out.Status != StatusSuccess || out.HTTPStatus != 200 || out.Body != "final" {
			t.Errorf("%d: outcome {%s %d %q %q}, want the final answer, SUCCESS 200", tt.code, out.Status, out.HTTPStatus, out.Body, out.Error)
			continue
		}
		if got := <-hops; got != tt.wantHop {
			t.Errorf("%d: the redirected request was %+v, want %+v", tt.code, got, tt.wantHop)
		}
	}
	if out := e.Deliver(t.Context(), testRequest(srv.URL+"/no-location")); out.Status != StatusFailed ||
		out.HTTPStatus != 302 || out.Error != "HTTP 302 Found" {
		t.Errorf("302 without Location: {%s %d %q}, want FAILED 302", out.Status, out.HTTPStatus, out.Error)
	}
	if out := e.Deliver(t.Context(), testRequest(srv.URL+"/chain/9")); out.Status != StatusSuccess || out.HTTPStatus != 200 {
		t.Errorf("9 redirects: {%s %d %q}, want SUCCESS 200", out.Status, out.HTTPStatus, out.Error)
	}
	if out := e.Deliver(t.Context(), testRequest(srv.URL+"/chain/10")); out.Status != StatusFailed ||
		out.Error != "stopped after 10 redirects" {
		t.Errorf("10 redirects: {%s %d %q}, want FAILED, stopped after 10 redirects", out.Status, out.HTTPStatus, out.Error)
	}
	if out := e.Deliver(t.Context(), testRequest(srv.URL+"/loop")); out.Status != StatusFailed ||
		out.HTTPStatus != 0 || out.Error != "stopped after 10 redirects" {
		t.Errorf("a redirect loop: {%s %d %q}, want FAILED, no status, stopped after 10 redirects", out.Status, out.HTTPStatus, out.Error)
	}
}
