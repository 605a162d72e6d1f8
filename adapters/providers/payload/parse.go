package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/delivery"
)

// maxDepth bounds the nesting DecodeObject accepts, as encoding/json does
// (its decoder refuses more than 10,000 levels): the parser below recurses
// once per level, so the bound is what keeps a hostile body from growing the
// goroutine's stack without limit.
const maxDepth = 10000

// errSyntax is what the parser reports for text that is not JSON; the
// caller wraps it as delivery.ErrMalformed.
var errSyntax = errors.New("syntax error")

// parser decodes one JSON value into the shapes encoding/json gives an
// `any` with UseNumber (map[string]any, []any, string, json.Number, bool,
// nil), in one pass that also finds repeated keys. It replaced
// json.Decoder plus the separate duplicate-key walk: that pair was the
// largest single function of the webhook path (13-14% of the server's CPU
// at saturation, docs/benchmarks/history/2026-12-01-1729-...). Strings with
// escapes or non-ASCII bytes are unquoted by encoding/json itself, so every
// string reads exactly as it did.
type parser struct {
	raw []byte
	// text is raw as a string, copied once: a plain string literal is a
	// slice of it, so that the keys and values of a payload cost no
	// allocation each (they were most of the allocations of a webhook).
	// Object's readers copy what they hand out (Object.OptString).
	text string
	i    int
	path []pathElem // the containers open around the current value, for errors
	dup  error      // the first repeated key; reported only if the text is valid
}

// pathElem is one open container: an object's current key, or an array's
// current index.
type pathElem struct {
	array bool
	key   string
	index int
}

// decodeValue decodes raw as exactly one JSON value. A syntax error wins
// over a repeated key, as it did when the whole text was decoded before
// its keys were checked.
func decodeValue(raw []byte) (any, error) {
	p := parser{raw: raw, text: string(raw)}
	p.skipSpace()
	v, err := p.value()
	if err == nil {
		p.skipSpace()
		if p.i < len(p.raw) {
			return nil, fmt.Errorf("%w: invalid JSON: data after the top-level value", delivery.ErrMalformed)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: invalid JSON: %v", delivery.ErrMalformed, err)
	}
	if p.dup != nil {
		return nil, p.dup
	}
	return v, nil
}

func (p *parser) skipSpace() {
	for p.i < len(p.raw) {
		switch p.raw[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) fail(what string) error {
	if p.i >= len(p.raw) {
		return fmt.Errorf("%w: unexpected end of input", errSyntax)
	}
	return fmt.Errorf("%w: %s at offset %d", errSyntax, what, p.i)
}

func (p *parser) value() (any, error) {
	if p.i >= len(p.raw) {
		return nil, p.fail("")
	}
	switch c := p.raw[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		return nil, p.fail(fmt.Sprintf("invalid character %q looking for a value", c))
	}
}

func (p *parser) literal(word string) error {
	if len(p.raw)-p.i < len(word) || string(p.raw[p.i:p.i+len(word)]) != word {
		return p.fail("invalid literal")
	}
	p.i += len(word)
	return nil
}

func (p *parser) open() error {
	if len(p.path) >= maxDepth {
		return p.fail("exceeded max depth")
	}
	p.i++ // '{' or '['
	p.skipSpace()
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.open(); err != nil {
		return nil, err
	}
	m := make(map[string]any)
	if p.i < len(p.raw) && p.raw[p.i] == '}' {
		p.i++
		return m, nil
	}
	p.path = append(p.path, pathElem{})
	at := len(p.path) - 1
	for {
		if p.i >= len(p.raw) || p.raw[p.i] != '"' {
			return nil, p.fail("looking for a key")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.path[at].key = key
		if _, repeated := m[key]; repeated && p.dup == nil {
			p.dup = fmt.Errorf("%w: %s", ErrDuplicateKey, p.pathString())
		}
		p.skipSpace()
		if p.i >= len(p.raw) || p.raw[p.i] != ':' {
			return nil, p.fail("looking for ':' after a key")
		}
		p.i++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		m[key] = v
		p.skipSpace()
		if p.i < len(p.raw) && p.raw[p.i] == ',' {
			p.i++
			p.skipSpace()
			continue
		}
		if p.i < len(p.raw) && p.raw[p.i] == '}' {
			p.i++
			p.path = p.path[:at]
			return m, nil
		}
		return nil, p.fail("looking for ',' or '}' after an object member")
	}
}

func (p *parser) array() (any, error) {
	if err := p.open(); err != nil {
		return nil, err
	}
	list := []any{}
	if p.i < len(p.raw) && p.raw[p.i] == ']' {
		p.i++
		return list, nil
	}
	p.path = append(p.path, pathElem{array: true})
	at := len(p.path) - 1
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		p.skipSpace()
		if p.i < len(p.raw) && p.raw[p.i] == ',' {
			p.i++
			p.path[at].index++
			p.skipSpace()
			continue
		}
		if p.i < len(p.raw) && p.raw[p.i] == ']' {
			p.i++
			p.path = p.path[:at]
			return list, nil
		}
		return nil, p.fail("looking for ',' or ']' after an array element")
	}
}

// str reads the string literal at p.i. Plain ASCII is its bytes; anything
// else (escapes, UTF-8, invalid UTF-8 to replace) is unquoted by
// encoding/json, which also judges the escapes.
func (p *parser) str() (string, error) {
	start := p.i
	plain := true
	for j := start + 1; j < len(p.raw); j++ {
		switch c := p.raw[j]; {
		case c == '"':
			p.i = j + 1
			if plain {
				return p.text[start+1 : j], nil
			}
			var s string
			if err := json.Unmarshal(p.raw[start:j+1], &s); err != nil {
				p.i = start
				return "", p.fail("invalid string")
			}
			return s, nil
		case c == '\\':
			plain = false
			j++ // the escaped byte; \uXXXX's digits are plain bytes
		case c < 0x20:
			p.i = j
			return "", p.fail("control character in a string")
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	p.i = len(p.raw)
	return "", p.fail("")
}

// number reads a number as JSON's grammar has it, kept as its text.
func (p *parser) number() (any, error) {
	start := p.i
	if p.raw[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.raw) && p.raw[p.i] == '0':
		p.i++
	case p.i < len(p.raw) && p.raw[p.i] >= '1' && p.raw[p.i] <= '9':
		p.digits()
	default:
		return nil, p.fail("invalid number")
	}
	if p.i < len(p.raw) && p.raw[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	if p.i < len(p.raw) && (p.raw[p.i] == 'e' || p.raw[p.i] == 'E') {
		p.i++
		if p.i < len(p.raw) && (p.raw[p.i] == '+' || p.raw[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	return json.Number(p.text[start:p.i]), nil
}

func (p *parser) digits() int {
	n := 0
	for p.i < len(p.raw) && p.raw[p.i] >= '0' && p.raw[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// pathString names the current member, from the root, as pathOf does.
func (p *parser) pathString() string {
	var b strings.Builder
	for _, e := range p.path {
		if e.array {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.index))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if e.key == "" {
			b.WriteString(`""`)
		} else {
			b.WriteString(e.key)
		}
	}
	return b.String()
}
