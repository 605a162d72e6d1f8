package payment

import (
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"
)

// A fast path for decoding the stored events: every wire struct is a flat
// JSON object of strings, integers and booleans, and encoding/json spends
// most of its time on generality (a validating pre-scan of the whole
// input, reflection per field, field names matched case-insensitively):
// it was about a third of a rebuild's CPU. unmarshalFlat decodes exactly
// the objects whose every key is a field's own name and whose every value
// is a plain string (no escapes, valid UTF-8), an integer or a boolean of
// the field's type — what Encode writes and the event store gives back —
// and reports false for anything else (other keys, escapes, null, nested
// values, malformed input), for encoding/json to decode as before, with
// its errors. What it accepts, it decodes as encoding/json would
// (TestFlatDecodeAgreesWithEncodingJSON).

// flatField is where a JSON key goes in a wire struct.
type flatField struct {
	index []int
	kind  reflect.Kind // String, Int64 or Bool
}

// flatFields are a wire struct's fields by JSON name; nil when the struct
// has a field the fast path does not handle in a way that could matter
// (a name twice, a field without a tag).
type flatFields map[string]flatField

var flatCache sync.Map // reflect.Type -> flatFields

func flatFieldsOf(t reflect.Type) flatFields {
	if f, ok := flatCache.Load(t); ok {
		return f.(flatFields)
	}
	fs := flatFields{}
	if !collectFlat(t, nil, fs) {
		fs = nil
	}
	flatCache.Store(t, fs)
	return fs
}

// collectFlat adds t's fields (embedded structs' included) to fs; false
// when one is out of the fast path's reach. Fields of other kinds (a
// slice) stay out of fs: a key naming one is unknown to the fast path,
// which then leaves the whole object to encoding/json.
func collectFlat(t reflect.Type, at []int, fs flatFields) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(append([]int(nil), at...), i)
		tag, hasTag := f.Tag.Lookup("json")
		name := tag
		for j := range len(tag) {
			if tag[j] == ',' {
				name = tag[:j]
				break
			}
		}
		if f.Anonymous && !hasTag && f.Type.Kind() == reflect.Struct {
			if !collectFlat(f.Type, idx, fs) {
				return false
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if !hasTag || name == "" {
			return false // matched by its Go name, case-insensitively: not here
		}
		if name == "-" {
			continue
		}
		if _, dup := fs[name]; dup {
			return false // encoding/json's rules for clashing names: not here
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Int64, reflect.Bool:
			fs[name] = flatField{index: idx, kind: f.Type.Kind()}
		}
	}
	return true
}

// unmarshalFlat decodes data into *v (a wire struct) if it is within the
// fast path's reach, and reports whether it did; if not, *v may be partly
// set and the caller decodes it again from scratch.
func unmarshalFlat(data []byte, v any) bool {
	rv := reflect.ValueOf(v).Elem()
	fs := flatFieldsOf(rv.Type())
	if fs == nil {
		return false
	}
	p := flatParser{data: data}
	p.ws()
	if !p.byte('{') {
		return false
	}
	p.ws()
	if p.byte('}') {
		p.ws()
		return p.i == len(p.data)
	}
	for {
		key, ok := p.str()
		if !ok {
			return false
		}
		p.ws()
		if !p.byte(':') {
			return false
		}
		p.ws()
		f, ok := fs[string(key)] // no allocation: a map lookup by converted bytes
		if !ok {
			return false
		}
		dst := rv.FieldByIndex(f.index)
		switch f.kind {
		case reflect.String:
			s, ok := p.str()
			if !ok {
				return false
			}
			dst.SetString(string(s))
		case reflect.Int64:
			n, ok := p.int()
			if !ok {
				return false
			}
			dst.SetInt(n)
		case reflect.Bool:
			b, ok := p.bool()
			if !ok {
				return false
			}
			dst.SetBool(b)
		default:
			return false
		}
		p.ws()
		if p.byte(',') {
			p.ws()
			continue
		}
		if !p.byte('}') {
			return false
		}
		p.ws()
		return p.i == len(p.data)
	}
}

type flatParser struct {
	data []byte
	i    int
}

func (p *flatParser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *flatParser) byte(c byte) bool {
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters, valid UTF-8.
func (p *flatParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	ascii := true
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			s := p.data[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false // encoding/json replaces invalid bytes
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return nil, false
}

// int reads a JSON integer (no fraction, no exponent) that fits int64.
func (p *flatParser) int() (int64, bool) {
	start := p.i
	if p.i < len(p.data) && p.data[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
		p.i++
	}
	switch {
	case p.i == digits:
		return 0, false
	case p.data[digits] == '0' && p.i-digits > 1:
		return 0, false // a leading zero is not JSON
	case p.i < len(p.data) && (p.data[p.i] == '.' || p.data[p.i] == 'e' || p.data[p.i] == 'E'):
		return 0, false
	}
	n, err := strconv.ParseInt(string(p.data[start:p.i]), 10, 64)
	return n, err == nil
}

func (p *flatParser) bool() (bool, bool) {
	rest := p.data[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}
