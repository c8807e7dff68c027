package executor

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// FuzzParamLookup: the indexed lookup a render uses once its walks have
// read enough of the params (here from the second lookup on) answers
// every path as lookupParam does, value and error alike, however many
// paths came before it.
func FuzzParamLookup(f *testing.F) {
	f.Add(`{"a":{"b":[1,"x\"y"]},"a":2,"c\u0041":[[0],{"d":null}]}`, "a.b.1,cA.1.d,cA.0.0,a,a.x,cA.2,cA.x,a.b.1.z")
	f.Add(`[true,{"k":"v"}]`, "0,1.k,2,1.k.z,01,-1")
	f.Add(` {"x\u00e9":1,"":2} `, "x,xé,a..b")
	f.Fuzz(func(t *testing.T, doc, paths string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		l := paramLookup{doc: []byte(doc), budget: 1} // index from the second lookup on
		for path := range strings.SplitSeq(paths, ",") {
			want, wantErr := lookupParam([]byte(doc), path)
			for range 2 { // the first lookup walks, the later ones use the index
				got, err := l.lookup(path)
				if string(got) != string(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Fatalf("lookup %q: %q, %v; lookupParam: %q, %v", path, got, err, want, wantErr)
				}
			}
		}
	})
}

// manyTags is a template of thousands of {{params.z}} tags over 63 KiB of
// params with z last: a body of a few KB, within any bound, whose render
// walked the params once a tag before they were indexed.
func manyTags() (string, []byte) {
	var b strings.Builder
	b.WriteByte('{')
	for i := range 5000 {
		fmt.Fprintf(&b, `"k%d":"%s",`, i, strings.Repeat("v", 6))
	}
	b.WriteString(`"z":1}`)
	return strings.Repeat("{{params.z}}", 5400), []byte(b.String())
}

func BenchmarkRenderManyParamTags(b *testing.B) {
	tmpl, params := manyTags()
	v := testVars()
	v.Params = params
	for b.Loop() {
		if _, err := RenderMax(tmpl, v, DefaultMaxBodyBytes); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBodyBoundManyParamTags(b *testing.B) {
	tmpl, params := manyTags()
	for b.Loop() {
		if _, _, err := BodyBound(tmpl, "t", params); err != nil {
			b.Fatal(err)
		}
	}
}
