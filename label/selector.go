package label

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxSelectorLen bounds the text of a selector, in bytes.
const MaxSelectorLen = 4096

// Operator is how a requirement compares a label.
type Operator string

// The operators of a selector, as String writes them.
const (
	Equals       Operator = "="     // k=v, k==v: the label is there with the value
	NotEquals    Operator = "!="    // k!=v: the label is not there, or has another value
	In           Operator = "in"    // k in (a,b): the label is there with one of the values
	NotIn        Operator = "notin" // k notin (a,b): the label is not there, or has none of the values
	Exists       Operator = "exists"
	DoesNotExist Operator = "!"
)

// Requirement is one condition of a selector: the label Key compared by Op
// with Values (one for Equals and NotEquals, one or more, sorted and
// without repeats, for In and NotIn, none for Exists and DoesNotExist).
type Requirement struct {
	Key    string
	Op     Operator
	Values []string
}

// Matches reports whether labels meet the requirement.
func (r Requirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Op {
	case Exists:
		return ok
	case DoesNotExist:
		return !ok
	case Equals, In:
		return ok && slices.Contains(r.Values, v)
	case NotEquals, NotIn:
		return !ok || !slices.Contains(r.Values, v)
	}
	return false
}

func (r Requirement) String() string {
	switch r.Op {
	case Exists:
		return r.Key
	case DoesNotExist:
		return "!" + r.Key
	case Equals, NotEquals:
		return r.Key + string(r.Op) + r.Values[0]
	}
	return r.Key + " " + string(r.Op) + " (" + strings.Join(r.Values, ",") + ")"
}

// Selector is a label selector: the labels it matches meet every one of
// its requirements. The empty selector matches every set of labels.
type Selector []Requirement

// Matches reports whether labels meet every requirement of s.
func (s Selector) Matches(labels map[string]string) bool {
	for _, r := range s {
		if !r.Matches(labels) {
			return false
		}
	}
	return true
}

// String is s in the syntax Parse reads, in a canonical form: = for ==,
// one space around in and notin, the values of a set sorted.
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// ParseError is a selector that cannot be read: Pos is the position (in
// characters, from 1) of the offending Token in the text, Reason what is
// wrong there.
type ParseError struct {
	Pos    int
	Token  string
	Reason string
}

func (e *ParseError) Error() string {
	if e.Token == "" {
		return fmt.Sprintf("at character %d: %s", e.Pos, e.Reason)
	}
	return fmt.Sprintf("at character %d (%q): %s", e.Pos, e.Token, e.Reason)
}

// Parse reads a selector in Kubernetes' syntax: requirements separated by
// commas, all of which must hold.
//
//	key=value  key==value   the label is there, with the value
//	key!=value              the label is not there, or has another value
//	key in (a,b)            the label is there, with one of the values
//	key notin (a,b)         the label is not there, or has none of the values
//	key                     the label is there
//	!key                    the label is not there
//
// Keys and values follow CheckKey and CheckValue; a value may be empty
// (key=). Space around the operators, commas and parentheses is ignored.
// Empty text (or space only) is the empty selector, which matches
// everything. Errors are *ParseError.
func Parse(text string) (Selector, error) {
	if len(text) > MaxSelectorLen {
		return nil, &ParseError{Pos: 1, Reason: fmt.Sprintf("a selector is at most %d bytes, not %d", MaxSelectorLen, len(text))}
	}
	if !utf8.ValidString(text) {
		return nil, &ParseError{Pos: 1, Reason: "a selector must be valid UTF-8"}
	}
	p := &parser{lex: lexer{text: text}}
	if p.peek().kind == tokEnd {
		return nil, nil
	}
	var sel Selector
	for {
		r, err := p.requirement()
		if err != nil {
			return nil, err
		}
		sel = append(sel, r)
		switch t := p.next(); t.kind {
		case tokEnd:
			return sel, nil
		case tokComma:
			if p.peek().kind == tokEnd {
				return nil, p.errAt(t, "a comma must be followed by another requirement")
			}
		default:
			return nil, p.errAt(t, "want a comma between requirements, or the end")
		}
	}
}

type tokKind int

const (
	tokEnd tokKind = iota
	tokIdent
	tokNot      // !
	tokEq       // = or ==
	tokNotEq    // !=
	tokComma    // ,
	tokOpen     // (
	tokClose    // )
	tokIn       // in
	tokNotIn    // notin
	tokCompare  // < or >: Kubernetes' gt and lt, which labels of tasks do not take
	tokBadEqual // =! and the like
)

type token struct {
	kind tokKind
	text string
	pos  int // byte offset
}

// word reports whether the token may be read as a key or a value: an
// identifier, or in and notin, which are words in those places.
func (t token) word() bool { return t.kind == tokIdent || t.kind == tokIn || t.kind == tokNotIn }

// lexer splits a selector into tokens: the symbols ! = == != , ( ) and
// identifiers, any run of other characters up to space or a symbol.
type lexer struct {
	text string
	pos  int
}

func isSymbol(c byte) bool {
	switch c {
	case '!', '=', ',', '(', ')', '<', '>':
		return true
	}
	return false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func (l *lexer) next() token {
	for l.pos < len(l.text) && isSpace(l.text[l.pos]) {
		l.pos++
	}
	start := l.pos
	if l.pos == len(l.text) {
		return token{kind: tokEnd, pos: start}
	}
	c := l.text[l.pos]
	if isSymbol(c) {
		// A run of symbols is one token, so that "=!" is refused as a
		// whole rather than read as = and !.
		end := l.pos
		for end < len(l.text) && (l.text[end] == '!' || l.text[end] == '=' || l.text[end] == '<' || l.text[end] == '>') {
			end++
		}
		if end == l.pos { // , ( )
			end++
		}
		l.pos = end
		t := token{text: l.text[start:end], pos: start}
		switch t.text {
		case "!":
			t.kind = tokNot
		case "=", "==":
			t.kind = tokEq
		case "!=":
			t.kind = tokNotEq
		case ",":
			t.kind = tokComma
		case "(":
			t.kind = tokOpen
		case ")":
			t.kind = tokClose
		case "<", ">":
			t.kind = tokCompare
		default:
			t.kind = tokBadEqual
		}
		return t
	}
	for l.pos < len(l.text) && !isSpace(l.text[l.pos]) && !isSymbol(l.text[l.pos]) {
		l.pos++
	}
	t := token{kind: tokIdent, text: l.text[start:l.pos], pos: start}
	switch t.text {
	case "in":
		t.kind = tokIn
	case "notin":
		t.kind = tokNotIn
	}
	return t
}

type parser struct {
	lex    lexer
	peeked *token
}

func (p *parser) next() token {
	if p.peeked != nil {
		t := *p.peeked
		p.peeked = nil
		return t
	}
	return p.lex.next()
}

func (p *parser) peek() token {
	if p.peeked == nil {
		t := p.lex.next()
		p.peeked = &t
	}
	return *p.peeked
}

// errAt is a ParseError at t.
func (p *parser) errAt(t token, reason string) *ParseError {
	return &ParseError{Pos: utf8.RuneCountInString(p.lex.text[:t.pos]) + 1, Token: t.text, Reason: reason}
}

// requirement reads one requirement.
func (p *parser) requirement() (Requirement, error) {
	t := p.next()
	if t.kind == tokNot {
		k := p.next()
		if !k.word() {
			return Requirement{}, p.errAt(k, "want a label key after !")
		}
		if err := p.checkKey(k); err != nil {
			return Requirement{}, err
		}
		if n := p.peek(); n.kind != tokEnd && n.kind != tokComma {
			return Requirement{}, p.errAt(n, "!key stands alone: it says the label is not there, and takes no operator or value")
		}
		return Requirement{Key: k.text, Op: DoesNotExist}, nil
	}
	if !t.word() {
		what := "want a label key"
		if t.kind == tokEnd {
			what = "want a requirement"
		}
		return Requirement{}, p.errAt(t, what)
	}
	if err := p.checkKey(t); err != nil {
		return Requirement{}, err
	}
	r := Requirement{Key: t.text}
	switch op := p.peek(); op.kind {
	case tokEnd, tokComma:
		r.Op = Exists
		return r, nil
	case tokEq, tokNotEq:
		p.next()
		r.Op = Equals
		if op.kind == tokNotEq {
			r.Op = NotEquals
		}
		v, err := p.value()
		if err != nil {
			return Requirement{}, err
		}
		r.Values = []string{v}
		return r, nil
	case tokIn, tokNotIn:
		p.next()
		r.Op = In
		if op.kind == tokNotIn {
			r.Op = NotIn
		}
		vs, err := p.set(op)
		if err != nil {
			return Requirement{}, err
		}
		r.Values = vs
		return r, nil
	case tokCompare:
		return Requirement{}, p.errAt(op, "< and > are not operators of a label selector: give =, ==, !=, in, notin")
	default:
		return Requirement{}, p.errAt(op, "want an operator after the key: =, ==, !=, in, notin, or a comma")
	}
}

// value reads the value after = or !=: a word, or nothing (the empty
// value) before a comma or the end.
func (p *parser) value() (string, error) {
	switch t := p.peek(); {
	case t.kind == tokEnd || t.kind == tokComma:
		return "", nil
	case t.word():
		p.next()
		return t.text, p.checkValue(t)
	default:
		return "", p.errAt(t, "want a value (or nothing, for the empty value)")
	}
}

// set reads the values of in or notin, "(a,b)": an empty item is the empty
// value, as in Kubernetes.
func (p *parser) set(op token) ([]string, error) {
	if t := p.next(); t.kind != tokOpen {
		return nil, p.errAt(t, fmt.Sprintf("want ( after %s, as in key %s (a,b)", op.text, op.text))
	}
	var vs []string
	for {
		v := ""
		t := p.next()
		if t.word() {
			if err := p.checkValue(t); err != nil {
				return nil, err
			}
			v = t.text
			t = p.next()
		}
		if !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
		switch t.kind {
		case tokClose:
			slices.Sort(vs)
			return vs, nil
		case tokComma:
		case tokEnd:
			return nil, p.errAt(t, "want ) to end the values")
		default:
			return nil, p.errAt(t, "want a value, a comma or )")
		}
	}
}

func (p *parser) checkKey(t token) error {
	if reason := CheckKey(t.text); reason != "" {
		return p.errAt(t, "not a label key: "+reason)
	}
	return nil
}

func (p *parser) checkValue(t token) error {
	if reason := CheckValue(t.text); reason != "" {
		return p.errAt(t, "not a label value: "+reason)
	}
	return nil
}
