package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	vconfig "github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"

	"go.yaml.in/yaml/v3"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/idtoken"
)

// The API's own routes are checked against the OpenAPI document by the api
// package's contract test. Here: the routes serve adds (/metrics, the OIDC
// keys and discovery document) are in it with their roles, and a running
// node's answers, those of its real scheduler included, match it.

// servedDoc fetches the document from n and returns it parsed, and a
// validator of requests and answers against it.
func servedDoc(t *testing.T, n *node, token string) (map[string]any, validator.Validator) {
	t.Helper()
	status, header, raw := n.call(t, "GET", "/api/v1/openapi.json", token, "")
	if status != http.StatusOK || header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json: %d %s", status, header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	d, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(d, vconfig.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("the served document is not valid OpenAPI 3.1:\n%s", describeErrors(errs))
	}
	return doc, v
}

// docSchema is the component schema name of the document n serves.
func docSchema(t *testing.T, n *node, token, name string) *base.Schema {
	t.Helper()
	_, _, raw := n.call(t, "GET", "/api/v1/openapi.json", token, "")
	d, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatal(err)
	}
	model, err := d.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	s := model.Model.Components.Schemas.GetOrZero(name)
	if s == nil {
		t.Fatalf("no schema %s in the document", name)
	}
	return s.Schema()
}

func describeErrors(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s: %s\n", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "    %s (at %s)\n", f.Reason, f.KeywordLocation)
		}
	}
	return b.String()
}

// TestServeOpenAPI: a node with authentication on answers as its document
// says: the routes serve adds, and a task's life through the real
// scheduler (a trigger admitted and delivered, the run and its attempt,
// the lists, the node and its compensator). Every operation of the
// document is served by the node.
func TestServeOpenAPI(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	target := newHook(t)
	n := startNode(t, filepath.Join(t.TempDir(), "sundial.db"),
		"--auth.required", "true", "--auth.bootstrap_token", bootstrapSecret)
	doc, v := servedDoc(t, n, bootstrapSecret)

	check := func(method, path, token, body string, want int) []byte {
		t.Helper()
		req := func() *http.Request {
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			r, err := http.NewRequest(method, n.url+path, rd)
			if err != nil {
				t.Fatal(err)
			}
			if body != "" || method == "POST" {
				r.Header.Set("Content-Type", "application/json")
			}
			if token != "" {
				r.Header.Set("Authorization", "Bearer "+token)
			}
			return r
		}
		resp, err := http.DefaultClient.Do(req())
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s = %d %.300s, want %d", method, path, resp.StatusCode, data, want)
		}
		if ok, errs := v.ValidateHttpRequestSync(req()); !ok {
			t.Errorf("%s %s: the document refuses the request:\n%s", method, path, describeErrors(errs))
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if ok, errs := v.ValidateHttpResponse(req(), resp); !ok {
			t.Errorf("%s %s: the answer %d does not match the document:\n%s\n%.500s", method, path, resp.StatusCode,
				describeErrors(errs), data)
		}
		return data
	}

	viewer := n.newToken(t, bootstrapSecret, "reader", "viewer").Secret
	begin := time.Now()
	check("GET", "/metrics", viewer, "", 200)
	check("GET", "/.well-known/jwks.json", "", "", 200)
	check("GET", "/.well-known/openid-configuration", "", "", 200)
	check("GET", "/healthz", "", "", 200)
	check("GET", "/readyz", "", "", 200)
	check("GET", "/api/v1/nodes", viewer, "", 200)
	check("GET", "/api/v1/admin/compensation", viewer, "", 200)

	var tk struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal(check("POST", "/api/v1/tasks", bootstrapSecret, fmt.Sprintf(`{"name":"contract","cron_expr":"0 0 0 1 1 *",
		"target_url":%q,"status":"DISABLED","retry_policy":{"max_attempts":2}}`, target.srv.URL+"/hook"), 201), &tk)
	var run struct {
		ID     int64  `json:"id"`
		Status string `json:"status"`
	}
	json.Unmarshal(check("POST", fmt.Sprintf("/api/v1/tasks/%d/trigger", tk.ID), bootstrapSecret, `{"params":{"a":1}}`, 202), &run)
	if run.Status != "RUNNING" {
		t.Errorf("the trigger answered %s, want RUNNING", run.Status)
	}
	target.wait(t, 1, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for run.Status != "SUCCESS" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		json.Unmarshal(check("GET", fmt.Sprintf("/api/v1/runs/%d", run.ID), viewer, "", 200), &run)
	}
	if run.Status != "SUCCESS" {
		t.Fatalf("the run is %s, want SUCCESS", run.Status)
	}
	// A rerun and a bulk trigger, admitted by the real scheduler.
	var again struct {
		Status  string `json:"status"`
		RerunOf int64  `json:"rerun_of"`
	}
	json.Unmarshal(check("POST", fmt.Sprintf("/api/v1/runs/%d/rerun", run.ID), bootstrapSecret, "", 202), &again)
	if again.RerunOf != run.ID || again.Status != "RUNNING" {
		t.Errorf("the rerun answered %+v, want RUNNING, a rerun of run %d", again, run.ID)
	}
	check("POST", "/api/v1/tasks:bulk", bootstrapSecret, fmt.Sprintf(`{"action":"trigger","ids":[%d]}`, tk.ID), 200)
	target.wait(t, 2, 10*time.Second)
	// The run's events, as the real scheduler made them, match the
	// document's Event.
	eventSchema := docSchema(t, n, viewer, "Event")
	s := openEvents(t, n.url, fmt.Sprintf("?task=%d&since=%s", tk.ID, url.QueryEscape(begin.UTC().Format(time.RFC3339Nano))),
		"Authorization", "Bearer "+viewer)
	for _, kind := range []sundial.EventKind{sundial.EventTaskCreated, sundial.EventRunScheduled, sundial.EventRunStarted, sundial.EventRunFinished} {
		e, f := s.nextFrame(t, 10*time.Second, nil)
		if e.Kind != kind {
			t.Errorf("event %s, want %s", e.Kind, kind)
		}
		if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(eventSchema, f.data); !ok {
			t.Errorf("the %s event is not the document's Event:\n%s\n%s", e.Kind, describeErrors(errs), f.data)
		}
	}
	check("GET", fmt.Sprintf("/api/v1/runs?task_id=%d&planned=true", tk.ID), viewer, "", 200)
	check("GET", fmt.Sprintf("/api/v1/tasks/%d/upcoming", tk.ID), viewer, "", 200)
	check("GET", "/api/v1/audit", bootstrapSecret, "", 200)

	// Every operation of the document is a route of the node: none is
	// answered "no such endpoint", nor 405 by the router.
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			m := strings.ToUpper(method)
			if !slices.Contains([]string{"GET", "PUT", "POST", "DELETE", "PATCH"}, m) {
				continue
			}
			p := strings.ReplaceAll(path, "{id}", "987654")
			if path == "/api/v1/events" {
				p += "?kinds=none" // a 400 at once, not a stream
			}
			status, _, data := n.call(t, m, p, bootstrapSecret, "")
			if strings.Contains(string(data), "no such endpoint") || strings.Contains(string(data), " is not allowed on ") {
				t.Errorf("%s %s is in the document but not served by the node: %d %s", m, path, status, data)
			}
		}
	}
}

// TestServeRoutesDocumented: every route cmd/sundial adds to the API
// (api.Server.Handle, with its role) is an operation of the document with
// that role. The patterns are read from the source, so that a route added
// here without the document fails.
func TestServeRoutesDocumented(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../api/openapi.yaml") // what the api package embeds and serves
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{"idtoken.JWKSPath": idtoken.JWKSPath, "idtoken.DiscoveryPath": idtoken.DiscoveryPath}
	roles := map[string]string{"sundial.RoleNone": "none", "sundial.RoleViewer": "viewer", "sundial.RoleOperator": "operator",
		"sundial.RoleEditor": "editor", "sundial.RoleAdmin": "admin"}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			// api.Server.Handle takes a pattern, a role and a handler;
			// an http.ServeMux's Handle has no role.
			if !ok || sel.Sel.Name != "Handle" || len(call.Args) != 3 {
				return true
			}
			found++
			at := fset.Position(call.Pos())
			pattern, err := constString(call.Args[0], consts)
			if err != nil {
				t.Errorf("%s: %v: add the constant to this test", at, err)
				return true
			}
			method, path, _ := strings.Cut(pattern, " ")
			op, ok := doc["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
			if !ok {
				t.Errorf("%s: the route %q is not in the document (api/openapi.yaml)", at, pattern)
				return true
			}
			role := roles[string(src[fset.Position(call.Args[1].Pos()).Offset:fset.Position(call.Args[1].End()).Offset])]
			if op["x-sundial-role"] != role {
				t.Errorf("%s: %s has the role %q; the document says %q", at, pattern, role, op["x-sundial-role"])
			}
			return true
		})
	}
	if found < 3 {
		t.Errorf("found %d routes added to the API, want at least 3 (/metrics, the JWKS and the discovery document)", found)
	}
}

// constString evaluates a string expression of literals and the named
// constants consts.
func constString(e ast.Expr, consts map[string]string) (string, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			return strconv.Unquote(e.Value)
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			a, err := constString(e.X, consts)
			if err != nil {
				return "", err
			}
			b, err := constString(e.Y, consts)
			return a + b, err
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if v, ok := consts[x.Name+"."+e.Sel.Name]; ok {
				return v, nil
			}
			return "", fmt.Errorf("unknown constant %s.%s", x.Name, e.Sel.Name)
		}
	}
	return "", fmt.Errorf("a pattern that is not a constant string")
}
