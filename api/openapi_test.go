package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	"go.yaml.in/yaml/v3"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/event"
)

// The document (openapi.yaml, served as GET /api/v1/openapi.json) is kept
// from drifting by three kinds of tests:
//
//   - the contract test (contract_test.go) sends requests through every
//     handler of a real Server on a real store and validates each request
//     and each answer, success and error, against the document with
//     libopenapi-validator, and fails on any (route, status) the document
//     lists that no request produced and on any property of an answer's
//     schema that no answer had;
//   - TestOpenAPIRoutes: every route of the Server is an operation of the
//     document, with the role and the query parameters the Server has, and
//     every operation is a route;
//   - TestOpenAPISchemasMatchTypes: the properties of each schema are the
//     JSON fields of the Go type it describes, required exactly when they
//     are always written, so that a field added, renamed or removed in the
//     code fails even before a request shows it.

// contract is the document as the server serves it, and a validator of
// requests and answers against it.
type contract struct {
	doc         map[string]any // the document, for what the validator has no call for
	v           validator.Validator
	errorSchema *base.Schema // for the answers of no operation: an unknown path, a wrong method
	// schemas are the component schemas, by name, for what the validator
	// does not read: the data of server-sent events.
	schemas map[string]*base.Schema

	mu   sync.Mutex      // the validator and seen
	seen map[string]bool // "METHOD /path STATUS" of every answer of an operation
	// fields are the "Schema.property" of every property of a component
	// schema that an answer has had.
	fields map[string]bool
}

// newContract reads the document from GET /api/v1/openapi.json of a
// server, checks it against the OpenAPI 3.1 schema and builds its
// validator.
func newContract(t *testing.T) *contract {
	t.Helper()
	rec := setup(t).do(t, http.MethodGet, "/api/v1/openapi.json", "", nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json: %d %s %.200s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	raw := rec.Body.Bytes()
	c := &contract{seen: map[string]bool{}, fields: map[string]bool{}}
	if err := json.Unmarshal(raw, &c.doc); err != nil {
		t.Fatalf("the served document is not JSON: %v", err)
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatalf("libopenapi: %v", err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("the document is not valid OpenAPI 3.1:\n%s", describe(errs))
	}
	c.v = v
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	c.errorSchema = model.Model.Components.Schemas.GetOrZero("Error").Schema()
	c.schemas = map[string]*base.Schema{}
	for name, proxy := range model.Model.Components.Schemas.FromOldest() {
		c.schemas[name] = proxy.Schema()
	}
	return c
}

// describe writes validation errors one a line, with their schema
// failures.
func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s: %s\n", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "    %s (at %s, %s)\n", f.Reason, f.InstancePath, f.KeywordLocation)
		}
	}
	return b.String()
}

// docOp is one operation of the document.
type docOp struct {
	method, path string         // GET, /api/v1/tasks/{id}
	op, item     map[string]any // the operation, and its path item
	c            *contract
}

func (o docOp) key() string { return o.method + " " + o.path }

func (o docOp) id() string { return o.op["operationId"].(string) }

func (o docOp) role() string { s, _ := o.op["x-sundial-role"].(string); return s }

// maxBody is x-sundial-max-body-bytes, 0 without one.
func (o docOp) maxBody() int { n, _ := o.op["x-sundial-max-body-bytes"].(float64); return int(n) }

// refusesUnknownQuery is x-sundial-refuses-unknown-query, the document's
// when the operation does not say.
func (o docOp) refusesUnknownQuery() bool {
	if v, ok := o.op["x-sundial-refuses-unknown-query"].(bool); ok {
		return v
	}
	return o.c.doc["x-sundial-refuses-unknown-query"].(bool)
}

func (o docOp) hasBody() bool { _, ok := o.op["requestBody"]; return ok }

// security is the names of the security schemes of the operation, the
// document's when it does not say; none for an open one.
func (o docOp) security() []string {
	reqs, ok := o.op["security"].([]any)
	if !ok {
		reqs = o.c.doc["security"].([]any)
	}
	var names []string
	for _, r := range reqs {
		for name := range r.(map[string]any) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// params are the parameters of the operation in where (query, path), its
// own and its path item's, by name.
func (o docOp) params(where string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, list := range []any{o.item["parameters"], o.op["parameters"]} {
		ps, _ := list.([]any)
		for _, p := range ps {
			pm := o.c.resolve(p.(map[string]any))
			if pm["in"] == where {
				out[pm["name"].(string)] = pm
			}
		}
	}
	return out
}

// statuses are the statuses of the operation's answers.
func (o docOp) statuses() []string {
	var out []string
	for s := range o.op["responses"].(map[string]any) {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// resolve follows a $ref within the document.
func (c *contract) resolve(m map[string]any) map[string]any {
	for {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = c.doc
		for seg := range strings.SplitSeq(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(map[string]any)[strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")]
		}
		m = cur.(map[string]any)
	}
}

var httpMethods = []string{"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"}

// ops are the operations of the document, by path and method.
func (c *contract) ops() []docOp {
	var out []docOp
	paths := c.doc["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		item := paths[path].(map[string]any)
		for _, m := range httpMethods {
			if op, ok := item[strings.ToLower(m)].(map[string]any); ok {
				out = append(out, docOp{method: m, path: path, op: op, item: item, c: c})
			}
		}
	}
	return out
}

// op is the operation of method on the path of a mux pattern
// ("GET /api/v1/tasks/{id}", or one for any method), if the document has
// one.
func (c *contract) op(method, pattern string) (docOp, bool) {
	_, path, ok := strings.Cut(pattern, " ")
	if !ok {
		path = pattern
	}
	for _, o := range c.ops() {
		if o.method == method && o.path == path {
			return o, true
		}
	}
	return docOp{}, false
}

// schema is the component schema name.
func (c *contract) schema(t *testing.T, name string) map[string]any {
	t.Helper()
	s, ok := c.doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
	if !ok {
		t.Fatalf("no schema %s in the document", name)
	}
	return s
}

// properties are the properties a schema declares, its allOf's included,
// and those it requires.
func (c *contract) properties(s map[string]any) (props map[string]any, required []string) {
	props = map[string]any{}
	var walk func(s map[string]any)
	walk = func(s map[string]any) {
		s = c.resolve(s)
		for k, v := range mapOf(s["properties"]) {
			props[k] = v
		}
		for _, r := range listOf(s["required"]) {
			required = append(required, r.(string))
		}
		for _, sub := range listOf(s["allOf"]) {
			walk(sub.(map[string]any))
		}
	}
	walk(s)
	sort.Strings(required)
	return props, slices.Compact(required)
}

// ownProperties are the properties a schema declares itself, in its
// properties or an inline allOf, not those of the schemas it refers to.
func (c *contract) ownProperties(s map[string]any) []string {
	var out []string
	out = append(out, sortedKeys(mapOf(s["properties"]))...)
	for _, sub := range listOf(s["allOf"]) {
		if _, ref := sub.(map[string]any)["$ref"]; !ref {
			out = append(out, c.ownProperties(sub.(map[string]any))...)
		}
	}
	return out
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }
func listOf(v any) []any         { l, _ := v.([]any); return l }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// docCheck is what the document must say of a request.
type docCheck int

const (
	docValid   docCheck = iota // it accepts the request
	docInvalid                 // it refuses the request, as the server does
	docSilent                  // it cannot tell; call.why says why
)

// call is one request of the contract test and the answer it must get.
type call struct {
	method, path string
	body         string   // sent with Content-Type: application/json unless contentType says otherwise
	contentType  string   // "-": none
	token        string   // the bearer token; "" for none
	header       []string // more headers, as name, value pairs; "Host" sets the request's Host
	status       int
	code, field  string // the error's, for an error status ("" : not checked)
	doc          docCheck
	why          string // why the document cannot tell (docSilent)
	// stream, for a stream of server-sent events, is how many events to
	// read before the client goes away.
	stream int
}

func (k call) request() *http.Request {
	var body io.Reader
	if k.body != "" {
		body = strings.NewReader(k.body)
	}
	r := httptest.NewRequest(k.method, k.path, body)
	switch ct := k.contentType; {
	case ct == "-":
	case ct != "":
		r.Header.Set("Content-Type", ct)
	case k.body != "" || k.method == http.MethodPost || k.method == http.MethodPut || k.method == http.MethodDelete ||
		k.method == http.MethodPatch:
		// As a client without a browser does, body or not.
		r.Header.Set("Content-Type", "application/json")
	}
	if k.token != "" {
		r.Header.Set("Authorization", "Bearer "+k.token)
	}
	for i := 0; i+1 < len(k.header); i += 2 {
		if k.header[i] == "Host" {
			r.Host = k.header[i+1]
			continue
		}
		r.Header.Set(k.header[i], k.header[i+1])
	}
	return r
}

// check sends k to srv and validates the request and the answer against
// the document: the answer always, the request as k.doc says. It returns
// the answer.
func (c *contract) check(t *testing.T, srv *Server, k call) *httptest.ResponseRecorder {
	t.Helper()
	what := k.method + " " + k.path
	var rec *httptest.ResponseRecorder
	if k.stream > 0 {
		rec = readStream(t, srv, k)
	} else {
		rec = httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, k.request())
	}
	if rec.Code != k.status {
		t.Errorf("%s: status %d, want %d; body %.300s", what, rec.Code, k.status, rec.Body)
	}
	if k.status >= 400 && (k.code != "" || k.field != "") {
		var e struct {
			Error errorDetail `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != k.code || e.Error.Field != k.field {
			t.Errorf("%s: error %+v (%v), want code %q field %q", what, e.Error, err, k.code, k.field)
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	ok, errs := c.v.ValidateHttpRequestSync(k.request())
	if e := c.undeclaredQuery(k.request()); e != nil {
		ok, errs = false, append(errs, e)
	}
	switch k.doc {
	case docValid:
		if !ok {
			t.Errorf("%s: the document refuses the request the server answered %d:\n%s", what, rec.Code, describe(errs))
		}
	case docInvalid:
		if ok {
			t.Errorf("%s: the document accepts the request the server refused with %d %.200s", what, rec.Code, rec.Body)
		}
	case docSilent:
		if k.why == "" {
			t.Errorf("%s: a request the document cannot judge needs a reason", what)
		}
	}

	req := k.request()
	_, pattern := srv.mux.Handler(req)
	if esc := req.URL.EscapedPath(); cleanPath(esc) != esc {
		pattern = "" // answered 404 before the mux: not a path of the document
	}
	o, found := c.op(k.method, pattern)
	if !found {
		// No operation: an unknown path or method, answered in the
		// shape of every error.
		if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(c.errorSchema, rec.Body.Bytes()); !ok {
			t.Errorf("%s: the answer of no operation (%d) is not an Error:\n%s", what, rec.Code, describe(errs))
		}
		if rec.Code == http.StatusMethodNotAllowed && rec.Header().Get("Allow") == "" {
			t.Errorf("%s: 405 without Allow", what)
		}
		return rec
	}
	if ok, errs := c.v.ValidateHttpResponse(k.request(), rec.Result()); !ok {
		t.Errorf("%s: the answer %d does not match the document:\n%s\nbody %.500s", what, rec.Code, describe(errs), rec.Body)
	}
	c.seen[fmt.Sprintf("%s %d", o.key(), rec.Code)] = true
	if mt := rec.Header().Get("Content-Type"); mt == "text/event-stream" {
		c.checkEvents(t, what, o, rec)
	}
	if mt := rec.Header().Get("Content-Type"); mt == "application/json" {
		if resp := mapOf(mapOf(o.op["responses"])[strconv.Itoa(rec.Code)]); resp != nil {
			var body any
			if json.Unmarshal(rec.Body.Bytes(), &body) == nil {
				schema := mapOf(mapOf(mapOf(c.resolve(resp)["content"])[mt])["schema"])
				c.walk(body, schema, "")
			}
		}
	}
	return rec
}

// readStream serves the stream k asks for until k.stream events (not
// comments) have come, then goes away as a client does, and returns what
// was answered.
func readStream(t *testing.T, srv *Server, k call) *httptest.ResponseRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := k.request().WithContext(ctx)
	sr := &streamRecorder{header: http.Header{}, chunks: make(chan []byte, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Handler().ServeHTTP(sr, req)
	}()
	var body bytes.Buffer
	timeout := time.After(10 * time.Second)
	for n := 0; n < k.stream; {
		select {
		case c := <-sr.chunks:
			body.Write(c)
			n = 0
			for f := range strings.SplitSeq(body.String(), "\n\n") {
				if strings.Contains(f, "data: ") {
					n++
				}
			}
		case <-done:
			n = k.stream // answered without a stream
		case <-timeout:
			t.Fatalf("%s %s: %d events within 10s, want %d: %q", k.method, k.path, strings.Count(body.String(), "data: "), k.stream, body.String())
		}
	}
	cancel()
	<-done
	for len(sr.chunks) > 0 {
		body.Write(<-sr.chunks)
	}
	rec := httptest.NewRecorder()
	maps.Copy(rec.Header(), sr.header)
	rec.WriteHeader(cmp.Or(sr.status, http.StatusOK))
	rec.Body = &body
	return rec
}

// checkEvents validates the data of each event of a stream against the
// schema the document names for it (x-sundial-event-data of the answer's
// media type), and records the properties they had.
func (c *contract) checkEvents(t *testing.T, what string, o docOp, rec *httptest.ResponseRecorder) {
	t.Helper()
	resp := c.resolve(mapOf(mapOf(o.op["responses"])[strconv.Itoa(rec.Code)]))
	byName := mapOf(mapOf(mapOf(resp["content"])["text/event-stream"])["x-sundial-event-data"])
	if byName == nil {
		t.Errorf("%s: the document names no schema of its events (x-sundial-event-data)", what)
		return
	}
	for raw := range strings.SplitSeq(rec.Body.String(), "\n\n") {
		var name, data string
		for line := range strings.Lines(raw) {
			line = strings.TrimSuffix(line, "\n")
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		if data == "" {
			continue
		}
		ref := mapOf(byName[name])
		if ref == nil {
			ref = mapOf(byName["default"])
		}
		schemaName := strings.TrimPrefix(fmt.Sprint(ref["$ref"]), "#/components/schemas/")
		schema := c.schemas[schemaName]
		if schema == nil {
			t.Errorf("%s: no schema %q for the event %q", what, schemaName, name)
			continue
		}
		if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(schema, []byte(data)); !ok {
			t.Errorf("%s: the data of event %q is not a %s:\n%s\n%s", what, name, schemaName, describe(errs), data)
		}
		var value any
		if json.Unmarshal([]byte(data), &value) == nil {
			c.walk(value, ref, "")
		}
	}
}

// walk records in c.fields the properties of component schemas that
// value, an instance of schema (named name, "" for an inline one), has.
func (c *contract) walk(value any, schema map[string]any, name string) {
	if schema == nil {
		return
	}
	if ref, ok := schema["$ref"].(string); ok {
		if n, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok {
			name = n
		}
		c.walk(value, c.resolve(schema), name)
		return
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		for _, sub := range listOf(schema[key]) {
			c.walk(value, sub.(map[string]any), name)
		}
	}
	switch v := value.(type) {
	case map[string]any:
		props := mapOf(schema["properties"])
		for k, fv := range v {
			if p, ok := props[k].(map[string]any); ok {
				if name != "" {
					c.fields[name+"."+k] = true
				}
				c.walk(fv, p, "")
			} else if ap, ok := schema["additionalProperties"].(map[string]any); ok {
				c.walk(fv, ap, "")
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for _, e := range v {
				c.walk(e, items, "")
			}
		}
	}
}

// undeclaredQuery is the error of a query parameter the operation of r
// does not declare, as the document says every route but those marked
// otherwise refuses one; nil when there is none or the operation does
// not refuse it.
func (c *contract) undeclaredQuery(r *http.Request) *verrors.ValidationError {
	for _, o := range c.ops() {
		if o.method != r.Method || !pathMatches(o.path, r.URL.Path) || !o.refusesUnknownQuery() {
			continue
		}
		declared := o.params("query")
		for name := range r.URL.Query() {
			if _, ok := declared[name]; !ok {
				return &verrors.ValidationError{Message: "query parameter " + name + " is not declared",
					Reason: o.key() + " refuses the query parameters it does not declare"}
			}
		}
	}
	return nil
}

// pathMatches reports whether the path template (/api/v1/tasks/{id})
// matches path.
func pathMatches(template, path string) bool {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if ts[i] != ps[i] && !(strings.HasPrefix(ts[i], "{") && ps[i] != "") {
			return false
		}
	}
	return true
}

// fill is the path template with each {id} replaced by id.
func fill(template string, id any) string {
	return strings.ReplaceAll(template, "{id}", fmt.Sprint(id))
}

// serveRoutes registers the routes cmd/sundial adds to the Server, as
// serve does, with handlers that stand in for its: the answers of their
// own handlers are validated by cmd/sundial's test, these only reach the
// API's checks (authentication, roles, rate limit).
func serveRoutes(s *Server) {
	standIn := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "stand-in of a route of cmd/sundial", http.StatusTeapot)
	})
	s.Handle("GET /metrics", sundial.RoleViewer, standIn)
	s.Handle("GET /.well-known/jwks.json", sundial.RoleNone, standIn)
	s.Handle("GET /.well-known/openid-configuration", sundial.RoleNone, standIn)
}

// TestOpenAPIRoutes: every route of the Server, with a database and the
// routes serve adds, is an operation of the document with the role it is
// registered with and the query parameters it reads; every operation of
// the document is served by a route of that path and method. A route
// registered for any method (the callback) is the operations of its path.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	c := newContract(t)
	srv := setupStore(t).srv
	serveRoutes(srv)

	byKey := map[string]docOp{}
	for _, o := range c.ops() {
		byKey[o.key()] = o
	}
	documented := func(method, path string) []docOp {
		var out []docOp
		for _, o := range c.ops() {
			if o.path == path && (method == "" || o.method == method) {
				out = append(out, o)
			}
		}
		return out
	}
	for _, pattern := range sortedKeys(srv.roles) {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			method, path = "", pattern
		}
		ops := documented(method, path)
		if len(ops) == 0 {
			t.Errorf("route %q is not in the document", pattern)
			continue
		}
		for _, o := range ops {
			want := srv.roles[pattern].String()
			if want == "" {
				want = "none"
			}
			if o.role() != want {
				t.Errorf("%s: x-sundial-role %q, want %q (the route's role)", o.key(), o.role(), want)
			}
			if params, builtIn := srv.params[pattern]; builtIn {
				if !o.refusesUnknownQuery() {
					t.Errorf("%s: the route refuses unknown query parameters; the document says it does not", o.key())
				}
				if method == "" && o.method == http.MethodGet {
					continue // the GET of the callback has a route of its own
				}
				got := sortedKeys(o.params("query"))
				want := slices.Sorted(slices.Values(params))
				if !slices.Equal(got, want) {
					t.Errorf("%s: query parameters %v in the document, %v read by the route", o.key(), got, want)
				}
			} else if o.refusesUnknownQuery() {
				t.Errorf("%s: registered with Handle, the route takes any query parameter; mark it x-sundial-refuses-unknown-query: false", o.key())
			}
		}
	}
	for _, o := range c.ops() {
		r := httptest.NewRequest(o.method, fill(o.path, 1), nil)
		_, pattern := srv.mux.Handler(r)
		_, path, ok := strings.Cut(pattern, " ")
		if !ok {
			path = pattern
		}
		if pattern == "" || path != o.path {
			t.Errorf("%s is in the document but no route serves it (the mux found %q)", o.key(), pattern)
		}
		// The roles and the security schemes agree: open routes have
		// none, the callbacks the run's token, all others an API token.
		want := []string{"apiToken"}
		switch {
		case strings.HasPrefix(o.path, "/api/v1/runs/{id}/") && o.role() == "none":
			want = []string{"callbackBearer", "callbackToken"}
		case o.role() == "none":
			want = nil
		}
		if got := o.security(); !slices.Equal(got, want) {
			t.Errorf("%s: security %v, want %v for the role %s", o.key(), got, want, o.role())
		}
	}
}

// TestOpenAPIDocument: the served JSON is the YAML written in the
// repository, key for key; the conversion refuses what JSON cannot hold.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	var fromYAML any
	if err := yaml.Unmarshal(openapiYAML, &fromYAML); err != nil {
		t.Fatal(err)
	}
	served, err := openapiJSON()
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON any
	if err := json.Unmarshal(served, &fromJSON); err != nil {
		t.Fatal(err)
	}
	// YAML decodes integers as int, JSON as float64: compare both as JSON.
	a, _ := json.Marshal(fromYAML)
	b, _ := json.Marshal(fromJSON)
	if string(a) != string(b) {
		t.Error("the served JSON differs from openapi.yaml")
	}
	if !strings.HasPrefix(string(served), `{"openapi":"3.1.0",`) {
		t.Errorf("the served JSON does not keep the order of the YAML: %.40s", served)
	}
	for _, bad := range []string{"200: x", "a: .inf", "a: !!binary aGk=", "a: 1\na: 2"} {
		if _, err := yamlToJSON([]byte(bad)); err == nil {
			t.Errorf("yamlToJSON(%q) converted what JSON cannot hold", bad)
		}
	}
	got, err := yamlToJSON([]byte("a: [1, 1.5, true, null, '<&>', x]\n'2': {}"))
	if want := `{"a":[1,1.5,true,null,"<&>","x"],"2":{}}` + "\n"; err != nil || string(got) != want {
		t.Errorf("yamlToJSON = %s, %v; want %s", got, err, want)
	}
}

// schemaOf pairs a Go type with the schema of the document that
// describes it.
type schemaOf struct {
	schema string
	typ    reflect.Type
	// request: a body the server reads, whose required fields are its
	// rules', not those always written: only the names are compared.
	request bool
	// notInSchema are JSON fields of the type the schema leaves out, and
	// why.
	notInSchema map[string]string
	// notInType are properties of the schema that the type does not
	// have, and why.
	notInType map[string]string
	// present are fields left out when empty that every answer of this
	// schema has, and why: the schema requires them.
	present map[string]string
}

// TestOpenAPISchemasMatchTypes: each schema's properties are the JSON
// fields of its Go type, and for an answer, the required ones are those
// written always (no omitempty).
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	t.Parallel()
	c := newContract(t)
	serverSet := "the server sets it: refused in a POST, ignored in a PUT (TaskReplace has it)"
	for _, s := range []schemaOf{
		{schema: "Task", typ: reflect.TypeFor[sundial.Task](),
			notInSchema: map[string]string{"delay_seconds": "input only: a create or replace turns it into run_at"},
			present:     map[string]string{"state": "every task answer has its state block (nil only outside the API)"}},
		{schema: "TaskState", typ: reflect.TypeFor[sundial.TaskHealth]()},
		{schema: "AlertChannel", typ: reflect.TypeFor[sundial.AlertChannel]()},
		{schema: "AlertChannelWritable", typ: reflect.TypeFor[channelRequest](), request: true},
		{schema: "SMTPSettings", typ: reflect.TypeFor[sundial.SMTPSettings]()},
		{schema: "AlertChannelTest", typ: reflect.TypeFor[channelTestResult]()},
		{schema: "AlertRule", typ: reflect.TypeFor[sundial.AlertRule]()},
		{schema: "AlertRuleWritable", typ: reflect.TypeFor[ruleRequest](), request: true},
		{schema: "AlertCondition", typ: reflect.TypeFor[sundial.AlertCondition]()},
		{schema: "Silence", typ: reflect.TypeFor[sundial.Silence]()},
		{schema: "Incident", typ: reflect.TypeFor[sundial.Incident]()},
		{schema: "IncidentPage", typ: reflect.TypeFor[listResponse[*sundial.Incident]]()},
		{schema: "Notification", typ: reflect.TypeFor[sundial.Notification]()},
		{schema: "NotificationAttempt", typ: reflect.TypeFor[sundial.NotificationAttempt]()},
		{schema: "LastRun", typ: reflect.TypeFor[sundial.LastRun]()},
		{schema: "TaskWritable", typ: reflect.TypeFor[taskRequest](), request: true,
			notInSchema: map[string]string{"status": "TaskCreate and TaskReplace each have the statuses they take",
				"id": serverSet, "version": serverSet, "created_at": serverSet, "updated_at": serverSet, "next_fire_time": serverSet,
				"disabled_at": serverSet, "disabled_by": serverSet, "state": serverSet, "fire_count": serverSet}},
		{schema: "OIDC", typ: reflect.TypeFor[sundial.OIDCOption](), request: true},
		{schema: "RunFields", typ: reflect.TypeFor[sundial.Run]()},
		{schema: "RunDetail", typ: reflect.TypeFor[runDetail]()},
		{schema: "Attempt", typ: reflect.TypeFor[sundial.Attempt]()},
		{schema: "RunPage", typ: reflect.TypeFor[listResponse[*sundial.Run]]()},
		{schema: "TaskPage", typ: reflect.TypeFor[listResponse[*sundial.Task]]()},
		{schema: "AuditPage", typ: reflect.TypeFor[listResponse[auditView]]()},
		{schema: "TokenList", typ: reflect.TypeFor[listResponse[tokenView]]()},
		{schema: "Upcoming", typ: reflect.TypeFor[upcomingResponse]()},
		{schema: "TaskBatch", typ: reflect.TypeFor[batchRequest](), request: true},
		{schema: "TaskBatchResult", typ: reflect.TypeFor[batchResponse]()},
		{schema: "BatchItem", typ: reflect.TypeFor[batchItem](),
			notInSchema: map[string]string{"error": "BatchItemError is an item of a refused batch"},
			present:     map[string]string{"task": "an item of a batch created has its task"}},
		{schema: "BatchItemError", typ: reflect.TypeFor[batchItem](),
			notInSchema: map[string]string{"task": "BatchItem is an item of a batch created"},
			present:     map[string]string{"error": "an item refused has its error"}},
		{schema: "Error", typ: reflect.TypeFor[errorBody]()},
		{schema: "ErrorDetail", typ: reflect.TypeFor[errorDetail]()},
		{schema: "Health", typ: reflect.TypeFor[healthResponse]()},
		{schema: "CronNext", typ: reflect.TypeFor[cronNextResponse]()},
		{schema: "Node", typ: reflect.TypeFor[sundial.Node]()},
		{schema: "NodeList", typ: reflect.TypeFor[nodeListResponse]()},
		{schema: "CompensationStatus", typ: reflect.TypeFor[sundial.CompensationStatus]()},
		{schema: "TokenCreate", typ: reflect.TypeFor[tokenRequest](), request: true},
		{schema: "Token", typ: reflect.TypeFor[tokenView](),
			notInSchema: map[string]string{"secret": "only in the answer of a create (TokenCreated)"}},
		{schema: "TokenCreated", typ: reflect.TypeFor[tokenView](),
			present: map[string]string{"secret": "the answer of a create has the secret"}},
		{schema: "AuditEntry", typ: reflect.TypeFor[auditView]()},
		{schema: "TriggerRequest", typ: reflect.TypeFor[triggerRequest](), request: true},
		{schema: "DisableRequest", typ: reflect.TypeFor[disableRequest](), request: true},
		{schema: "CallbackReport", typ: reflect.TypeFor[callbackRequest](), request: true},
		{schema: "ProgressReport", typ: reflect.TypeFor[progressRequest](), request: true},
		{schema: "BulkRequest", typ: reflect.TypeFor[bulkRequest](), request: true},
		{schema: "BulkItem", typ: reflect.TypeFor[bulkItem]()},
		{schema: "BulkResult", typ: reflect.TypeFor[bulkResponse]()},
		{schema: "BulkError", typ: reflect.TypeFor[bulkErrorBody]()},
		{schema: "Event", typ: reflect.TypeFor[sundial.Event]()},
		{schema: "EventTask", typ: reflect.TypeFor[sundial.EventTask]()},
		{schema: "EventRun", typ: reflect.TypeFor[sundial.EventRun]()},
		{schema: "EventReset", typ: reflect.TypeFor[event.Reset]()},
	} {
		props, required := c.properties(c.schema(t, s.schema))
		fields, always := jsonFields(s.typ)
		for _, f := range fields {
			if _, ok := props[f]; !ok && s.notInSchema[f] == "" {
				t.Errorf("%s: %s has the field %q; the schema does not", s.schema, s.typ, f)
			}
		}
		for p := range props {
			if !slices.Contains(fields, p) && s.notInType[p] == "" {
				t.Errorf("%s: the schema has the property %q; %s does not", s.schema, p, s.typ)
			}
		}
		if s.request {
			continue
		}
		for _, f := range always {
			if _, ok := props[f]; ok && !slices.Contains(required, f) {
				t.Errorf("%s: %q is always written (no omitempty), but not required", s.schema, f)
			}
		}
		for _, r := range required {
			if slices.Contains(fields, r) && !slices.Contains(always, r) && s.present[r] == "" {
				t.Errorf("%s: %q is required, but left out when empty (omitempty)", s.schema, r)
			}
		}
	}
	// The Run schema is RunFields, closed; RunDetail adds the attempts.
	if props, _ := c.properties(c.schema(t, "Run")); len(props) != len(jsonFieldsOnly(reflect.TypeFor[sundial.Run]())) {
		t.Errorf("Run has %d properties, the run %d", len(props), len(jsonFieldsOnly(reflect.TypeFor[sundial.Run]())))
	}
}

// jsonFields are the JSON names of the fields of struct type t (embedded
// structs' included), and those written even when empty.
func jsonFields(t reflect.Type) (fields, always []string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for f := range t.Fields() {
		if f.Anonymous && f.Tag.Get("json") == "" {
			ef, ea := jsonFields(f.Type)
			fields, always = append(fields, ef...), append(always, ea...)
			continue
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		fields = append(fields, name)
		if !strings.Contains(f.Tag.Get("json"), ",omitempty") {
			always = append(always, name)
		}
	}
	return fields, always
}

func jsonFieldsOnly(t reflect.Type) []string { f, _ := jsonFields(t); return f }
