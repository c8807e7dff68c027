package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sundialhq/sundial"
)

// codeMethodNotAllowed is the error code of a 405. It is not a domain code:
// only the router produces it.
const codeMethodNotAllowed = "method_not_allowed"

// statusByCode maps each client-facing sundial error code to its HTTP
// status. Any other code, sundial.EInternal included, is a 500.
var statusByCode = map[string]int{
	sundial.EInvalid:      http.StatusBadRequest,
	sundial.ENotFound:     http.StatusNotFound,
	sundial.EConflict:     http.StatusConflict,
	sundial.EPrecondition: http.StatusPreconditionFailed,
	sundial.ETooLarge:     http.StatusRequestEntityTooLarge,
	sundial.EUnsupported:  http.StatusUnsupportedMediaType,
	sundial.EUnauthorized: http.StatusUnauthorized,
	sundial.EForbidden:    http.StatusForbidden,
	sundial.ERateLimited:  http.StatusTooManyRequests,
	sundial.EUnavailable:  http.StatusServiceUnavailable,
}

// retryAfter is the Retry-After, in seconds, of a 503: the database is
// unavailable, and a few seconds is the time a restart, a failover or a
// lock released takes.
const retryAfter = "5"

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Token   string `json:"token,omitempty"`
}

// writeError answers with the status and JSON body for err. A *sundial.Error
// with a client-facing code is shown as it is; anything else is logged and
// answered with a 500 that says only "internal error".
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if e, ok := errors.AsType[*sundial.Error](err); ok {
		if status, ok := statusByCode[e.Code]; ok {
			if e.Code == sundial.EUnavailable {
				// The cause is the operator's to see, not the client's.
				s.logger().LogAttrs(r.Context(), slog.LevelWarn, "request failed: database unavailable",
					slog.String("component", "api"), slog.String("method", r.Method),
					slog.String("path", r.URL.Path), slog.Any("err", e.Err))
				w.Header().Set("Retry-After", retryAfter)
			}
			writeJSON(w, status, errorBody{Error: errorDetail{
				Code:    e.Code,
				Message: e.Message,
				Field:   e.Field,
				Token:   e.Token,
			}})
			return
		}
	}

	level := slog.LevelError
	if errors.Is(err, context.Canceled) {
		level = slog.LevelDebug // the client went away; nothing is wrong
	}
	s.logger().LogAttrs(r.Context(), level, "request failed",
		slog.String("component", "api"),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Any("err", err),
	)
	writeJSON(w, http.StatusInternalServerError, errorBody{Error: errorDetail{
		Code:    sundial.EInternal,
		Message: "internal error",
	}})
}

// errNoRoute is the error for a path no route serves.
func errNoRoute(r *http.Request) error {
	return sundial.Errorf(sundial.ENotFound, "", "no such endpoint: %s %s", r.Method, r.URL.Path)
}

// writeJSON answers with status and v encoded as JSON, followed by a
// newline: the one writer of every JSON answer. Strings are not
// HTML-escaped (a URL's & stays &, not \u0026): answers are JSON, served as
// such with nosniff, never HTML. A value that cannot be encoded is a
// programming error; the client then gets a 500.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b := encodeJSON(v)
	if b == nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// encodeJSON is v as an answer's JSON, not HTML-escaped, with a final
// newline; nil if v cannot be encoded.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return b.Bytes()
}

// decodeJSON decodes the request body, a single JSON object of at most
// maxBytes bytes, into dst, strictly: the Content-Type must be
// application/json; text that is not valid UTF-8, a key given twice (see
// checkJSON), unknown fields and trailing data are errors. Client mistakes
// come back as *sundial.Error (unsupported, too_large, invalid) ready for
// writeError.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any, maxBytes int64) error {
	raw, err := readJSON(w, r, maxBytes)
	if err != nil {
		return err
	}
	if err := checkJSON(raw); err != nil {
		return err
	}
	return decodeStrict(raw, dst)
}

// readJSON reads the request body, of at most maxBytes bytes, once its
// Content-Type is application/json.
func readJSON(w http.ResponseWriter, r *http.Request, maxBytes int64) ([]byte, error) {
	if err := checkContentType(r); err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
	if err != nil {
		return nil, readError(r, err, maxBytes)
	}
	return raw, nil
}

// checkContentType refuses a request body that is not application/json.
func checkContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		e := sundial.Errorf(sundial.EUnsupported, "", "Content-Type must be application/json")
		e.Token = ct
		return e
	}
	// JSON is UTF-8 (RFC 8259): a charset, if given, must say so.
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return &sundial.Error{Code: sundial.EUnsupported, Token: ct,
			Message: "a JSON body is UTF-8: give Content-Type application/json, or application/json; charset=utf-8"}
	}
	return nil
}

// readError is the error of reading r's body, limited to maxBytes: a 413
// that names the limit and the endpoint when the body is over it.
func readError(r *http.Request, err error, maxBytes int64) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		endpoint := r.Method + " " + r.URL.Path
		if _, p, ok := strings.Cut(r.Pattern, " "); ok {
			endpoint = r.Method + " " + p
		} else if r.Pattern != "" {
			endpoint = r.Method + " " + r.Pattern
		}
		return sundial.Errorf(sundial.ETooLarge, "", "request body is larger than %s, the limit of %s",
			byteSize(maxBytes), endpoint)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The server's read timeout: a body that trickles in.
		return sundial.Errorf(sundial.EInvalid, "",
			"the request body did not arrive within the server's read timeout (api.read_timeout)")
	}
	if r.Context().Err() != nil {
		return fmt.Errorf("read request body: %w", r.Context().Err()) // the client went away
	}
	// A body cut short or badly framed (chunked encoding) is the client's.
	return sundial.Errorf(sundial.EInvalid, "",
		"the request body could not be read: it ended early or its chunked encoding is malformed")
}

// byteSize writes n bytes as the docs do: 16 MiB, 128 KiB, 64 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// decodeStrict decodes raw, one JSON object (checked by checkJSON), into
// dst: unknown fields and data after the object are invalid.
func decodeStrict(raw []byte, dst any) error {
	if err := checkKeys(raw, dst); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields() // checkKeys has refused them already
	if err := dec.Decode(dst); err != nil {
		if e, ok := errors.AsType[*time.ParseError](err); ok {
			return timeError(raw, e)
		}
		return decodeError(err, dst)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return sundial.Errorf(sundial.EInvalid, "", "request body has data after the JSON object, at offset %d", dec.InputOffset()-int64(len(extra)))
	default:
		return sundial.Errorf(sundial.EInvalid, "", "request body has data after the JSON object: %v", err)
	}
}

// timeError is the client error of a date-time field whose string is not
// RFC 3339 (encoding/json names no field for it): the field is the
// top-level key holding that string, if one does.
func timeError(raw []byte, e *time.ParseError) error {
	out := &sundial.Error{Code: sundial.EInvalid, Token: e.Value, Message: "not an RFC 3339 time (for example 2026-01-01T00:00:00Z)"}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for k, v := range obj {
			var str string
			if json.Unmarshal(v, &str) == nil && str == e.Value {
				out.Field = k
				break
			}
		}
	}
	return out
}

// decodeError turns an error of json.Decoder.Decode into dst into a
// client error, or wraps it when the fault is not the client's.
func decodeError(err error, dst any) error {
	if e, ok := errors.AsType[*json.SyntaxError](err); ok {
		return sundial.Errorf(sundial.EInvalid, "", "malformed JSON at offset %d: %v", e.Offset, e)
	}
	if e, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return typeError(e, dst)
	}
	if errors.Is(err, io.EOF) {
		return sundial.Errorf(sundial.EInvalid, "", "request body is empty, want a JSON object")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return sundial.Errorf(sundial.EInvalid, "", "malformed JSON: the body ends before the object does")
	}
	// checkKeys refuses unknown fields first; this is a safety net (and
	// encoding/json has no error type for them).
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if unq, uerr := strconv.Unquote(name); uerr == nil {
			name = unq
		}
		return &sundial.Error{Code: sundial.EInvalid, Field: name, Token: name, Message: "unknown field"}
	}
	return fmt.Errorf("decode request body: %w", err)
}
