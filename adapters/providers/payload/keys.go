package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/delivery"
)

// ErrDuplicateKey is wrapped by UniqueKeys when one JSON object names the
// same key twice. It wraps delivery.ErrMalformed (→ 400).
//
// Why reject: RFC 8259 leaves duplicate names undefined and parsers differ
// (encoding/json keeps the last, others the first or refuse), so a signed
// `"amount":1,"amount":2` does not say one amount. Whatever we picked, the
// raw bytes kept for audit would support the other reading too.
var ErrDuplicateKey = fmt.Errorf("%w: duplicate key", delivery.ErrMalformed)

// KeyRule says which keys of an object collide. The zero value compares
// keys exactly, which suits objects read as maps or with free-form keys
// (Stripe metadata may hold both "orderId" and "orderid", legitimately).
//
// Fold is for payloads decoded into Go structs: encoding/json matches struct
// fields ignoring case, so `"status":"a","Status":"b"` is last-wins there too
// and must count as a repeat. ExactUnder lists member names whose object
// value, and everything nested in it, is nevertheless a map with exact keys
// (Adyen's additionalData).
type KeyRule struct {
	Fold       bool
	ExactUnder []string
}

// UniqueKeys reports the first key, at any depth of the one JSON value in
// raw, that occurs twice in its object, as an error wrapping ErrDuplicateKey
// and naming the key by its path ("data.object.amount"). Keys are compared
// after unescaping, so "amount" and "\u0061mount" are the same key, as they
// are to every decoder. Invalid JSON is reported as delivery.ErrMalformed.
// It runs in time linear in len(raw), however deep the nesting.
func UniqueKeys(raw []byte, rule KeyRule) error {
	return uniqueKeys(raw, "", rule)
}

// keyFrame is one open object or array. Paths are not kept per frame (that
// would cost time quadratic in the depth); pathOf rebuilds one for an error.
type keyFrame struct {
	object    bool
	fold      bool
	seen      map[string]string // compared form -> key as sent
	expectKey bool
	key       string // current member's key (objects)
	index     int    // current element's index (arrays)
}

func (f *keyFrame) valueDone() {
	if f.object {
		f.expectKey = true
	} else {
		f.index++
	}
}

// pathOf names the current member of the innermost frame, from the root.
func pathOf(root string, stack []*keyFrame) string {
	var b strings.Builder
	b.WriteString(root)
	for _, f := range stack {
		if !f.object {
			fmt.Fprintf(&b, "[%d]", f.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if f.key == "" {
			b.WriteString(`""`) // visible in the message
		} else {
			b.WriteString(f.key)
		}
	}
	return b.String()
}

// uniqueKeys checks raw in one pass over its bytes once json.Valid has
// accepted it (both linear, neither allocating per token). Invalid JSON takes
// the decoder's walk, for its error message. The byte walk is what every
// webhook pays: the decoder's Token allocates per token and builds an error
// value after every scalar, which made it the costliest step of a Stripe
// delivery's parse.
func uniqueKeys(raw []byte, root string, rule KeyRule) error {
	if !json.Valid(raw) {
		return uniqueKeysDecoding(raw, root, rule)
	}
	return uniqueKeysOfValid(raw, root, rule)
}

// uniqueKeysOfValid is uniqueKeys' byte walk, for raw known to be one valid
// JSON value. (DecodeObject finds repeated keys while it parses: parse.go.)
func uniqueKeysOfValid(raw []byte, root string, rule KeyRule) error {
	var stack []*keyFrame
	var top *keyFrame
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{', '[':
			f := &keyFrame{object: c == '{', fold: rule.Fold}
			if top != nil {
				f.fold = top.fold && !(top.object && slices.Contains(rule.ExactUnder, top.key))
			}
			if f.object {
				f.expectKey = true
				f.seen = map[string]string{}
			}
			stack = append(stack, f)
			top = f
		case '}', ']':
			stack = stack[:len(stack)-1]
			top = nil
			if len(stack) > 0 {
				top = stack[len(stack)-1]
				top.valueDone()
			}
		case '"':
			end := stringEnd(raw, i)
			if top != nil && top.object && top.expectKey {
				key, err := unquote(raw[i : end+1])
				if err != nil {
					return fmt.Errorf("%w: invalid JSON: %v", delivery.ErrMalformed, err)
				}
				if prev, dup := top.add(key); dup {
					return duplicate(pathOf(root, stack), prev, key)
				}
			} else if top != nil {
				top.valueDone()
			}
			i = end
		case ' ', '\t', '\n', '\r', ',', ':':
		default: // a number, true, false or null: skip to its end
			for i+1 < len(raw) && !isDelim(raw[i+1]) {
				i++
			}
			if top != nil {
				top.valueDone()
			}
		}
	}
	return nil
}

// stringEnd returns the index of the quote closing the string whose opening
// quote is at raw[start] (raw is valid JSON).
func stringEnd(raw []byte, start int) int {
	for i := start + 1; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++ // the escaped byte; \uXXXX's digits are plain bytes
		case '"':
			return i
		}
	}
	return len(raw) - 1
}

// unquote decodes a JSON string literal as encoding/json does (escapes
// decoded, invalid UTF-8 replaced by U+FFFD); plain ASCII is its bytes.
func unquote(lit []byte) (string, error) {
	body := lit[1 : len(lit)-1]
	plain := true
	for _, c := range body {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(body), nil
	}
	var s string
	err := json.Unmarshal(lit, &s)
	return s, err
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// uniqueKeysDecoding is the walk over the decoder's tokens, kept for input
// that is not valid JSON: its error says what is wrong and where.
func uniqueKeysDecoding(raw []byte, root string, rule KeyRule) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers are not looked at; this avoids float parsing
	var stack []*keyFrame
	for values := 0; ; {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			// Token stops quietly at the end of the input, even inside a value.
			if len(stack) > 0 || values == 0 {
				return fmt.Errorf("%w: invalid JSON: unexpected end of input", delivery.ErrMalformed)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: invalid JSON: %v", delivery.ErrMalformed, err)
		}
		if len(stack) == 0 {
			if values++; values > 1 {
				return fmt.Errorf("%w: invalid JSON: data after the top-level value", delivery.ErrMalformed)
			}
		}
		var top *keyFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 {
					stack[len(stack)-1].valueDone()
				}
				continue
			}
			key, _ := tok.(string) // the decoder allows nothing else here
			if prev, dup := top.add(key); dup {
				return duplicate(pathOf(root, stack), prev, key)
			}
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			f := &keyFrame{object: tok == json.Delim('{'), fold: rule.Fold}
			if top != nil {
				f.fold = top.fold && !(top.object && slices.Contains(rule.ExactUnder, top.key))
			}
			if f.object {
				f.expectKey = true
				f.seen = map[string]string{}
			}
			stack = append(stack, f)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				stack[len(stack)-1].valueDone()
			}
		default: // a scalar value
			if top != nil {
				top.valueDone()
			}
		}
	}
}

// add records key as the frame's current member. If an earlier key
// collides with it, add reports that key as sent.
func (f *keyFrame) add(key string) (prev string, dup bool) {
	cmp := key
	if f.fold {
		cmp = foldKey(key)
	}
	f.key, f.expectKey = key, false
	if prev, dup = f.seen[cmp]; dup {
		return prev, true
	}
	f.seen[cmp] = key
	return "", false
}

func duplicate(path, prev, key string) error {
	if prev != key {
		return fmt.Errorf("%w: %s (same field as %q: keys are matched ignoring case)", ErrDuplicateKey, path, prev)
	}
	return fmt.Errorf("%w: %s", ErrDuplicateKey, path)
}

// foldKey maps key to one representative of its case-folding class: two keys
// get the same result exactly when strings.EqualFold holds for them, which is
// how encoding/json matches keys to struct fields.
func foldKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range key {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}
