// Package ui is Sundial's web console: hand-written ES modules and one
// style sheet, embedded in the binary and served under /ui/ with no build
// step. The console reads and acts only through the public REST API
// (/api/v1, api/openapi.yaml) and its event stream, with the API token
// the user signs in with; nothing here decides anything. See
// docs/console.md for what it shows and docs/design.md for why it is
// built so.
//
// Assets are served from /ui/v/<hash>/, where hash is a digest of every
// asset: an URL names one version of the console, cached for a year, and
// the modules' relative imports stay within it. The page itself (/ui/,
// and every path under /ui/ that is not an asset, for the browser's
// history) is revalidated by its ETag on every load.
//
// vendor/ holds third-party modules, as their packages ship them, each
// with its licence: they are assets like the others (in the digest,
// under the same policy), loaded by a dynamic import() from the one
// page that needs them, so they are no part of the first load.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where the console is served.
const Prefix = "/ui/"

// asset is one embedded file, ready to serve.
type asset struct {
	body, gzipped []byte
	ctype, etag   string
}

// Console serves the embedded console.
type Console struct {
	version string            // digest of every asset
	files   map[string]*asset // by path under assets/
	index   *asset
}

// New reads the embedded assets, compresses them and renders the page.
func New() *Console {
	c := &Console{files: map[string]*asset{}}
	all := sha256.New()
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "assets/")
		all.Write([]byte(name))
		all.Write(b)
		c.files[name] = newAsset(b, contentType(name))
		return nil
	})
	if err != nil {
		panic("ui: read the embedded assets: " + err.Error()) // they are compiled in
	}
	c.version = hex.EncodeToString(all.Sum(nil))[:12]
	page := c.files["index.html"]
	delete(c.files, "index.html")
	c.index = newAsset(bytes.ReplaceAll(page.body, []byte("{{base}}"), []byte(c.base())), "text/html; charset=utf-8")
	return c
}

// base is the URL path of this version's assets, with a trailing slash.
func (c *Console) base() string { return Prefix + "v/" + c.version + "/" }

// contentType is the media type an asset is served with: a module is
// JavaScript whatever the system's MIME table says of .mjs.
func contentType(name string) string {
	switch ext := path.Ext(name); ext {
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	default:
		return mime.TypeByExtension(ext)
	}
}

func newAsset(b []byte, ctype string) *asset {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	sum := sha256.Sum256(b)
	if strings.HasPrefix(ctype, "text/javascript") {
		ctype = "text/javascript; charset=utf-8"
	}
	return &asset{body: b, gzipped: z.Bytes(), ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

// csp keeps the console to its own origin: no script, style, font or
// connection goes anywhere else, and no other site may frame it.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console under Prefix and redirects / to it; every
// other request goes to next (the API).
func (c *Console) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if r.Method != http.MethodGet && r.Method != http.MethodHead || p != "/" && p != "/ui" && !strings.HasPrefix(p, Prefix) {
			next.ServeHTTP(w, r)
			return
		}
		if p == "/" || p == "/ui" {
			http.Redirect(w, r, Prefix, http.StatusFound)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if rest, ok := strings.CutPrefix(p, Prefix+"v/"); ok {
			version, name, _ := strings.Cut(rest, "/")
			a := c.files[name]
			if a == nil {
				http.NotFound(w, r)
				return
			}
			if version == c.version {
				h.Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				// Another node's version, or an old page: serve what
				// this node has, but do not keep it.
				h.Set("Cache-Control", "no-cache")
			}
			serve(w, r, a)
			return
		}
		// The page, for any path under /ui/: the router reads the rest.
		h.Set("Cache-Control", "no-cache")
		serve(w, r, c.index)
	})
}

// serve writes a, gzipped when the client takes it, or 304 when the
// client's copy is current.
func serve(w http.ResponseWriter, r *http.Request, a *asset) {
	h := w.Header()
	h.Set("ETag", a.etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("Content-Type", a.ctype)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body = a.gzipped
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// acceptsGzip reports whether an Accept-Encoding takes gzip (not with
// q=0).
func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// FirstLoadBytes is what a browser downloads, gzipped, on its first load
// of the console: the page and every asset it loads at start (FirstLoad).
func (c *Console) FirstLoadBytes() int {
	n := len(c.index.gzipped)
	for _, name := range c.FirstLoad() {
		n += len(c.files[name].gzipped)
	}
	return n
}

var (
	// pageRef is an asset the page names (a script, a style sheet, a
	// preloaded module, an icon).
	pageRef = regexp.MustCompile(`(?:href|src)="\{\{base\}\}([^"]+)"`)
	// staticImport is a module's static import or re-export; a dynamic
	// import() is not one: it loads when the code that makes it runs.
	staticImport = regexp.MustCompile(`(?m)^\s*(?:import|export)\s(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]`)
)

// FirstLoad names, sorted, the assets a first load of the console
// fetches: those the page names and, from the modules among them, every
// module they import statically, and so on. A module only imported
// dynamically (vendor/js-yaml.mjs, by the editor) is not among them.
func (c *Console) FirstLoad() []string {
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		a := c.files[name]
		if a == nil || seen[name] {
			return
		}
		seen[name] = true
		if !strings.HasPrefix(a.ctype, "text/javascript") {
			return
		}
		for _, m := range staticImport.FindAllSubmatch(a.body, -1) {
			if spec := string(m[1]); strings.HasPrefix(spec, ".") {
				visit(path.Join(path.Dir(name), spec))
			}
		}
	}
	page, _ := assets.ReadFile("assets/index.html")
	for _, m := range pageRef.FindAllSubmatch(page, -1) {
		visit(string(m[1]))
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
