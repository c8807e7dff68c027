package ui

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// serveOne serves one request through a Console in front of a stand-in API.
func serveOne(t *testing.T, c *Console, method, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	apiHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-API", "yes")
		w.WriteHeader(http.StatusTeapot)
	})
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	c.Handler(apiHandler).ServeHTTP(rec, req)
	return rec
}

var assetRef = regexp.MustCompile(`(?:href|src)="(/ui/v/[0-9a-f]+/[^"]+)"`)

// TestConsole: / and /ui redirect to /ui/; the page is revalidated by its
// ETag (304 when current) and names its assets under a versioned path,
// each served gzipped, immutable, with its type; an unknown asset is 404;
// every other request (the API) passes through untouched.
func TestConsole(t *testing.T) {
	t.Parallel()
	c := New()

	for _, p := range []string{"/", "/ui"} {
		rec := serveOne(t, c, "GET", p)
		if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/ui/" {
			t.Errorf("GET %s = %d Location %q, want 302 to /ui/", p, rec.Code, rec.Header().Get("Location"))
		}
	}
	for _, k := range []struct{ method, path string }{{"GET", "/api/v1/tasks"}, {"POST", "/"}, {"GET", "/healthz"}, {"POST", "/ui/"}} {
		if rec := serveOne(t, c, k.method, k.path); rec.Code != http.StatusTeapot || rec.Header().Get("X-API") != "yes" {
			t.Errorf("%s %s = %d, want it passed to the API", k.method, k.path, rec.Code)
		}
	}

	for _, p := range []string{"/ui/", "/ui/tasks/3"} {
		rec := serveOne(t, c, "GET", p)
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
			rec.Header().Get("Cache-Control") != "no-cache" || rec.Header().Get("ETag") == "" ||
			!strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'none'") {
			t.Fatalf("GET %s = %d %v", p, rec.Code, rec.Header())
		}
	}
	page := serveOne(t, c, "GET", "/ui/")
	if rec := serveOne(t, c, "GET", "/ui/", "If-None-Match", page.Header().Get("ETag")); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("GET /ui/ with its ETag = %d, want 304", rec.Code)
	}
	if strings.Contains(page.Body.String(), "{{base}}") || strings.Contains(page.Body.String(), "http") {
		t.Errorf("the page has an unrendered base or an absolute URL (nothing may load from elsewhere):\n%s", page.Body)
	}

	refs := assetRef.FindAllStringSubmatch(page.Body.String(), -1)
	if len(refs) < 5 {
		t.Fatalf("the page names %d assets:\n%s", len(refs), page.Body)
	}
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	for _, m := range refs {
		p := m[1]
		rec := serveOne(t, c, "GET", p, "Accept-Encoding", "br, gzip")
		ext := p[strings.LastIndex(p, "."):]
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" ||
			rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" || rec.Header().Get("Content-Type") != types[ext] {
			t.Errorf("GET %s = %d %v", p, rec.Code, rec.Header())
			continue
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil || len(plain) == 0 {
			t.Errorf("GET %s: gunzip: %v (%d bytes)", p, err, len(plain))
		}
		if id := serveOne(t, c, "GET", p); id.Header().Get("Content-Encoding") != "" || id.Body.Len() != len(plain) {
			t.Errorf("GET %s without gzip: encoding %q, %d bytes, want %d plain", p, id.Header().Get("Content-Encoding"), id.Body.Len(), len(plain))
		}
	}
	other := strings.Replace(refs[0][1], c.version, "0123456789ab", 1)
	if rec := serveOne(t, c, "GET", other); rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("GET %s (another version) = %d %q, want 200 not cached", other, rec.Code, rec.Header().Get("Cache-Control"))
	}
	if rec := serveOne(t, c, "GET", "/ui/v/"+c.version+"/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown asset = %d, want 404", rec.Code)
	}
	if rec := serveOne(t, c, "GET", refs[0][1], "Accept-Encoding", "gzip;q=0"); rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got gzip")
	}
}

// TestFirstLoadBudget: the console's first load, every asset it fetches
// gzipped, is under 150 KB.
func TestFirstLoadBudget(t *testing.T) {
	t.Parallel()
	n := New().FirstLoadBytes()
	t.Logf("first load: %d bytes gzipped", n)
	if n >= 150*1024 {
		t.Errorf("first load is %d bytes gzipped, over the budget of 150 KB", n)
	}
}

// TestFirstLoad: the first load follows the page's assets and the
// modules' static imports (every page's module is one); the vendored YAML
// library, which the editor imports dynamically, is not part of it but is
// served, a versioned module like the others, with its licence.
func TestFirstLoad(t *testing.T) {
	t.Parallel()
	c := New()
	got := strings.Join(c.FirstLoad(), " ")
	for _, want := range []string{"app.js", "lib.js", "style.css", "favicon.svg", "pages/edit.js", "pages/tasks.js"} {
		if !slices.Contains(c.FirstLoad(), want) {
			t.Errorf("the first load %q lacks %s", got, want)
		}
	}
	const lib = "vendor/js-yaml.mjs"
	if slices.Contains(c.FirstLoad(), lib) {
		t.Errorf("the first load %q has %s, which only the editor needs", got, lib)
	}
	if edit := string(c.files["pages/edit.js"].body); !strings.Contains(edit, "import('../"+lib+"')") {
		t.Errorf("pages/edit.js does not import %s dynamically", lib)
	}
	for name, ctype := range map[string]string{lib: "text/javascript; charset=utf-8", "vendor/js-yaml.LICENSE.txt": "text/plain; charset=utf-8"} {
		rec := serveOne(t, c, "GET", "/ui/v/"+c.version+"/"+name)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ctype ||
			rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s = %d %v, want 200 %s, immutable", name, rec.Code, rec.Header(), ctype)
		}
	}
}
