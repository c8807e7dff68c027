package api

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"

	"go.yaml.in/yaml/v3"
)

// openapiYAML is the OpenAPI 3.1 document of the API, as written: YAML,
// for its comments and because it reads better in a review.
//
//go:embed openapi.yaml
var openapiYAML []byte

// openapiJSON is the document as GET /api/v1/openapi.json serves it: the
// YAML converted to JSON once, its keys in the order they are written.
var openapiJSON = sync.OnceValues(func() ([]byte, error) { return yamlToJSON(openapiYAML) })

// handleOpenAPI serves GET /api/v1/openapi.json.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := openapiJSON()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(doc)
}

// yamlToJSON converts a YAML document to JSON, keeping the order of the
// keys of each mapping. Only what JSON can hold is taken: string keys, and
// scalars that are strings, numbers, booleans or null.
func yamlToJSON(src []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	var b bytes.Buffer
	if err := writeNode(&b, &root); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func writeNode(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: want one document", n.Line)
		}
		return writeNode(b, n.Content[0])
	case yaml.AliasNode:
		return writeNode(b, n.Alias)
	case yaml.MappingNode:
		b.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return fmt.Errorf("line %d: a key must be a string (quote it)", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: key %q given twice", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k.Value)
			b.WriteByte(':')
			if err := writeNode(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeNode(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(b, n)
	default:
		return fmt.Errorf("line %d: unexpected YAML node", n.Line)
	}
	return nil
}

func writeScalar(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!str":
		writeString(b, n.Value)
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int":
		var v int64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.WriteString(strconv.FormatInt(v, 10))
	case "!!float":
		var v float64
		if err := n.Decode(&v); err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("line %d: %q is not a JSON number", n.Line, n.Value)
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	default:
		return fmt.Errorf("line %d: a scalar tagged %s has no JSON form", n.Line, n.ShortTag())
	}
	return nil
}

// writeString writes s as a JSON string, not HTML-escaped, as every answer
// of the API is.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // the newline Encode adds
}
