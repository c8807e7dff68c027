package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

// echoRequest is what the decodeJSON test handler accepts.
type echoRequest struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Inner struct {
		On bool `json:"on"`
	} `json:"inner"`
}

const echoMaxBytes = 64

// echo registers a handler that decodes an echoRequest and sends it back.
func (b *bundle) echo() {
	b.srv.Handle("POST /api/v1/test/echo", sundial.RoleEditor, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req echoRequest
		if err := decodeJSON(w, r, &req, echoMaxBytes); err != nil {
			b.srv.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, req)
	}))
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string
		body        string
		status      int
		want        errorDetail // compared whole unless messageHas is set
		messageHas  string      // the message must hold this; want.Message is ignored
	}{
		{name: "ok", contentType: "application/json", body: `{"name":"a","count":2}`, status: http.StatusOK},
		{name: "charset", contentType: "application/json; charset=utf-8", body: `{"name":"a"}`, status: http.StatusOK},
		{name: "trailing whitespace", contentType: "application/json", body: "{\"name\":\"a\"}\n\n", status: http.StatusOK},
		{
			name: "no content type", body: `{"name":"a"}`,
			status: http.StatusUnsupportedMediaType,
			want:   errorDetail{Code: sundial.EUnsupported, Message: "Content-Type must be application/json"},
		},
		{
			name: "text/plain", contentType: "text/plain", body: `{"name":"a"}`,
			status: http.StatusUnsupportedMediaType,
			want:   errorDetail{Code: sundial.EUnsupported, Message: "Content-Type must be application/json", Token: "text/plain"},
		},
		{
			name: "json suffix type", contentType: "application/jsonx", body: `{}`,
			status: http.StatusUnsupportedMediaType,
			want:   errorDetail{Code: sundial.EUnsupported, Message: "Content-Type must be application/json", Token: "application/jsonx"},
		},
		{
			name: "too large", contentType: "application/json",
			body:   `{"name":"` + strings.Repeat("a", echoMaxBytes) + `"}`,
			status: http.StatusRequestEntityTooLarge,
			want:   errorDetail{Code: sundial.ETooLarge, Message: "request body is larger than 64 bytes, the limit of POST /api/v1/test/echo"},
		},
		{
			name: "too large after the object", contentType: "application/json",
			body:   `{"name":"a"}` + strings.Repeat(" ", echoMaxBytes),
			status: http.StatusRequestEntityTooLarge,
			want:   errorDetail{Code: sundial.ETooLarge, Message: "request body is larger than 64 bytes, the limit of POST /api/v1/test/echo"},
		},
		{
			name: "malformed", contentType: "application/json", body: `{"name":}`,
			status: http.StatusBadRequest,
			want: errorDetail{Code: sundial.EInvalid,
				Message: "malformed JSON at offset 9: invalid character '}' looking for beginning of value"},
		},
		{
			name: "truncated", contentType: "application/json", body: `{"name":"a"`,
			status: http.StatusBadRequest,
			want:   errorDetail{Code: sundial.EInvalid, Message: "malformed JSON: the body ends before the object does"},
		},
		{
			name: "empty", contentType: "application/json", body: ``,
			status: http.StatusBadRequest,
			want:   errorDetail{Code: sundial.EInvalid, Message: "request body is empty, want a JSON object"},
		},
		{
			name: "not an object", contentType: "application/json", body: `[1]`,
			status: http.StatusBadRequest,
			want:   errorDetail{Code: sundial.EInvalid, Message: "request body must be a JSON object; got an array"},
		},
		{
			name: "wrong type", contentType: "application/json", body: `{"count":"two"}`,
			status: http.StatusBadRequest,
			want:   errorDetail{Code: sundial.EInvalid, Field: "count", Message: "must be an integer, such as 10; got a string"},
		},
		{
			name: "fractional integer", contentType: "application/json", body: `{"count":1.5}`,
			status: http.StatusBadRequest,
			want:   errorDetail{Code: sundial.EInvalid, Field: "count", Token: "1.5", Message: "must be an integer, such as 10; got the number 1.5"},
		},
		{
			name: "nested wrong type", contentType: "application/json", body: `{"inner":{"on":1}}`,
			status: http.StatusBadRequest,
			want:   errorDetail{Code: sundial.EInvalid, Field: "inner.on", Message: "must be a boolean, such as true; got a number"},
		},
		{
			//nolint:misspell // a misspelt field on purpose
			name: "unknown field", contentType: "application/json", body: `{"nmae":"a"}`,
			status: http.StatusBadRequest,
			want: errorDetail{Code: sundial.EInvalid, Field: "nmae", Token: "nmae", //nolint:misspell // as above
				Message: `unknown field "nmae"; did you mean "name"?`}, //nolint:misspell // as above
		},
		{
			name: "second object", contentType: "application/json", body: `{"name":"a"} {"name":"b"}`,
			status: http.StatusBadRequest,
			want:   errorDetail{Code: sundial.EInvalid, Message: "request body has data after the JSON object, at offset 13"},
		},
		{
			name: "trailing garbage", contentType: "application/json", body: `{"name":"a"}x`,
			status:     http.StatusBadRequest,
			want:       errorDetail{Code: sundial.EInvalid},
			messageHas: "request body has data after the JSON object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.echo()
			rec := b.do(t, http.MethodPost, "/api/v1/test/echo", tt.contentType, strings.NewReader(tt.body))
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.status, rec.Body)
			}
			if tt.status == http.StatusOK {
				var got, want echoRequest
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
					t.Fatalf("decode echo: %v", err)
				}
				if err := json.Unmarshal([]byte(tt.body), &want); err != nil {
					t.Fatalf("decode input: %v", err)
				}
				if got != want {
					t.Errorf("echo = %+v, want %+v", got, want)
				}
				return
			}
			got := errorOf(t, rec)
			if tt.messageHas != "" {
				if !strings.Contains(got.Message, tt.messageHas) {
					t.Errorf("message %q does not hold %q", got.Message, tt.messageHas)
				}
				got.Message = ""
			}
			if got != tt.want {
				t.Errorf("error = %+v, want %+v", got, tt.want)
			}
			if log := b.log.String(); log != "" {
				t.Errorf("a client error was logged: %s", log)
			}
		})
	}
}
