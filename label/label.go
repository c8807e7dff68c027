// Package label owns the labels of tasks and the selectors that pick tasks
// by them, in Kubernetes' syntax and with its limits, so that what works in
// kubectl -l works here: Check says whether a set of labels is valid, and
// Parse reads a selector ("team=payments,env!=prod,tier in (a,b)") into a
// Selector that matches labels in Go (Matches) and that the stores turn
// into SQL (its Requirements).
//
// It is Sundial's own, not k8s.io/apimachinery's labels package: that
// module brings a large tree of dependencies for one parser, while the
// grammar is small and fixed. The table tests hold it to Kubernetes' rules,
// and a fuzz test to its own round trip (Parse, String, Parse).
package label

import (
	"fmt"
	"slices"
	"strings"
)

// Limits of labels: Kubernetes' for a key's name and prefix and for a
// value, and Sundial's own for how many labels a task may carry.
const (
	MaxNameLen   = 63  // a key's name, after the prefix
	MaxPrefixLen = 253 // a key's prefix, a DNS subdomain
	MaxValueLen  = 63
	MaxLabels    = 64 // labels on one task
)

// Error is a label that breaks a rule: Key is the label's key, Value its
// value when the value is at fault (and OnValue is set), Reason what is
// wrong.
type Error struct {
	Key     string
	Value   string
	OnValue bool
	Reason  string
}

func (e *Error) Error() string {
	if e.OnValue {
		return fmt.Sprintf("label %q: value %q: %s", e.Key, e.Value, e.Reason)
	}
	return fmt.Sprintf("label key %q: %s", e.Key, e.Reason)
}

// Check returns the first rule the labels break, or nil: at most
// MaxLabels of them, then, in key order, each key valid (CheckKey) and
// each value (CheckValue), an *Error naming the label. Nil and empty are
// valid.
func Check(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("a task has at most %d labels, not %d", MaxLabels, len(labels))
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if reason := CheckKey(k); reason != "" {
			return &Error{Key: k, Reason: reason}
		}
		if reason := CheckValue(labels[k]); reason != "" {
			return &Error{Key: k, Value: labels[k], OnValue: true, Reason: reason}
		}
	}
	return nil
}

// CheckKey says what is wrong with a label key, or "" when it is valid:
// an optional prefix, a DNS subdomain of at most 253 characters followed by
// "/", and a name of 1 to 63 characters, letters, digits, '-', '_' and '.',
// beginning and ending with a letter or digit (app.kubernetes.io/name).
func CheckKey(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	if hasPrefix {
		if strings.Contains(name, "/") {
			return `a key has at most one "/", between its prefix and its name`
		}
		if reason := checkPrefix(prefix); reason != "" {
			return reason
		}
	}
	if name == "" {
		return "a key's name must not be empty"
	}
	if len(name) > MaxNameLen {
		return fmt.Sprintf("a key's name must be at most %d characters, not %d", MaxNameLen, len(name))
	}
	return checkText(name, "a key's name")
}

// CheckValue says what is wrong with a label value, or "" when it is
// valid: empty, or 1 to 63 characters as a key's name.
func CheckValue(v string) string {
	if v == "" {
		return ""
	}
	if len(v) > MaxValueLen {
		return fmt.Sprintf("a value must be at most %d characters, not %d", MaxValueLen, len(v))
	}
	return checkText(v, "a value")
}

// checkText checks a name or value: letters, digits, '-', '_' and '.',
// beginning and ending with a letter or digit.
func checkText(s, what string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlnum(c):
		case c == '-' || c == '_' || c == '.':
			if i == 0 || i == len(s)-1 {
				return what + " must begin and end with a letter or digit"
			}
		default:
			return fmt.Sprintf("%s may hold only letters, digits, '-', '_' and '.', not %s", what, quoteByte(s, i))
		}
	}
	return ""
}

// checkPrefix checks a key's prefix: a lower-case DNS subdomain (RFC 1123),
// dot-separated labels of lower-case letters, digits and '-', each
// beginning and ending with a letter or digit.
func checkPrefix(p string) string {
	if p == "" {
		return `a key's prefix (before "/") must not be empty`
	}
	if len(p) > MaxPrefixLen {
		return fmt.Sprintf("a key's prefix must be at most %d characters, not %d", MaxPrefixLen, len(p))
	}
	for part := range strings.SplitSeq(p, ".") {
		if part == "" {
			return "a key's prefix must be a DNS subdomain (example.com): no empty part between dots"
		}
		if len(part) > 63 {
			return "a key's prefix must be a DNS subdomain: each part between dots at most 63 characters"
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			case c == '-':
				if i == 0 || i == len(part)-1 {
					return "a key's prefix must be a DNS subdomain: each part begins and ends with a letter or digit"
				}
			default:
				return fmt.Sprintf("a key's prefix must be a DNS subdomain of lower-case letters, digits, '-' and '.', not %s",
					quoteByte(part, i))
			}
		}
	}
	return ""
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// quoteByte quotes the character of s at byte i (the whole rune when it is
// not ASCII).
func quoteByte(s string, i int) string {
	r := []rune(s[i:])
	if len(r) == 0 {
		return fmt.Sprintf("%q", s[i:i+1])
	}
	return fmt.Sprintf("%q", string(r[0]))
}
