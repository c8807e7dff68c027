package sundial

import (
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends e encoded as JSON to b: the same bytes encoding/json's
// Marshal makes of e (the field order and omitempty of its tags, strings
// escaped as Marshal escapes them, times as time.Time's MarshalJSON
// writes them), without reflection. A node encodes each of its events
// for the cluster (PostgreSQL's NOTIFY) and for its streams. Like
// Marshal, it fails on a time that RFC 3339 cannot write (a year past
// 9999); then b is returned as it was.
func (e *Event) AppendJSON(b []byte) ([]byte, error) {
	out, err := e.appendJSON(b)
	if err != nil {
		return b, err // appends wrote past len(b) only
	}
	return out, nil
}

func (e *Event) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendJSONString(b, e.ID)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(e.Kind))
	b = append(b, `,"at":`...)
	if b, err = appendJSONTime(b, e.At); err != nil {
		return b, err
	}
	if e.NodeID != "" {
		b = append(b, `,"node_id":`...)
		b = appendJSONString(b, e.NodeID)
	}
	b = append(b, `,"task":{"id":`...)
	b = strconv.AppendInt(b, e.Task.ID, 10)
	if e.Task.Name != "" {
		b = append(b, `,"name":`...)
		b = appendJSONString(b, e.Task.Name)
	}
	if e.Task.Status != "" {
		b = append(b, `,"status":`...)
		b = appendJSONString(b, string(e.Task.Status))
	}
	if e.Task.Version != 0 {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, e.Task.Version, 10)
	}
	if len(e.Task.Changed) > 0 {
		b = append(b, `,"changed":[`...)
		for i, c := range e.Task.Changed {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, c)
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	if r := e.Run; r != nil {
		if b, err = r.appendJSON(append(b, `,"run":`...)); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func (r *EventRun) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, r.ID, 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(r.Status))
	if r.SkipReason != "" {
		b = append(b, `,"skip_reason":`...)
		b = appendJSONString(b, string(r.SkipReason))
	}
	b = append(b, `,"trigger":`...)
	b = appendJSONString(b, string(r.Trigger))
	b = append(b, `,"scheduled_time":`...)
	if b, err = appendJSONTime(b, r.ScheduledTime); err != nil {
		return b, err
	}
	if r.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(r.Attempt), 10)
	}
	if r.Delivery != 0 {
		b = append(b, `,"delivery":`...)
		b = strconv.AppendInt(b, int64(r.Delivery), 10)
	}
	for _, t := range [...]struct {
		key string
		at  *time.Time
	}{{`,"started_at":`, r.StartedAt}, {`,"finished_at":`, r.FinishedAt}, {`,"due_at":`, r.DueAt}} {
		if t.at != nil {
			if b, err = appendJSONTime(append(b, t.key...), *t.at); err != nil {
				return b, err
			}
		}
	}
	if r.HTTPStatus != 0 {
		b = append(b, `,"http_status":`...)
		b = strconv.AppendInt(b, int64(r.HTTPStatus), 10)
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, r.Error)
	}
	if r.MissedCount != 0 {
		b = append(b, `,"missed_count":`...)
		b = strconv.AppendInt(b, int64(r.MissedCount), 10)
	}
	return append(b, '}'), nil
}

// appendJSONTime appends t as time.Time's MarshalJSON writes it, and fails
// where it fails (returning nil).
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, errors.New("encode a time as JSON: " + err.Error())
	}
	return append(b, '"'), nil
}

// appendJSONString appends s as a JSON string the way encoding/json's
// Marshal writes it: '"' and '\\' escaped with a backslash, control
// characters as \b, \f, \n, \r, \t or \u00XX, '<', '>' and '&' as \u00XX
// (Marshal's HTML escaping), U+2028 and U+2029 as \u2028 and \u2029, and
// each byte of invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
