package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Object is one decoded JSON object plus its path from the payload root, so
// that every error names the exact field ("data.object.amount").
//
// The payload is decoded generically (numbers as json.Number) rather than into
// typed structs: encoding/json accepts a quoted number into a json.Number
// field and its errors do not name the field's path; we want each wrong shape
// reported, by name, as the 400 it is.
//
// Readers come in pairs: Opt... reports whether the field is there (absent,
// null and, for strings, "" are not), Req... makes absence an
// ErrMissingField. A field that is there with the wrong type is an error for
// both.
type Object struct {
	// The path is kept in parts and joined only for an error: most
	// objects read are never named (base.field[index-1], index 0 for
	// none; base "" at the first level).
	base, field string
	index       int
	m           map[string]any
}

// path is the object's path from the payload root ("" for the root).
func (o Object) path() string {
	p := o.field
	if o.index > 0 {
		p = p + "[" + strconv.Itoa(o.index-1) + "]"
	}
	if o.base != "" {
		p = o.base + "." + p
	}
	return p
}

// DecodeObject decodes raw as exactly one JSON object, numbers kept exact.
// A key repeated in one object, at any depth, is refused (ErrDuplicateKey);
// keys differing in case are distinct, as they are to Object's readers.
func DecodeObject(raw []byte) (Object, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return Object{}, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Object{}, fmt.Errorf("%w: payload is not a JSON object", delivery.ErrMalformed)
	}
	return Object{m: m}, nil
}

// Name is field's path from the payload root, for errors.
func (o Object) Name(field string) string {
	p := o.path()
	if p == "" {
		return field
	}
	return p + "." + field
}

// Get returns the decoded value (numbers as json.Number), treating JSON null
// as absent: providers such as Stripe send null for unset fields.
func (o Object) Get(field string) (any, bool) {
	v, ok := o.m[field]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func (o Object) missing(field string) error {
	return fmt.Errorf("%w: %s", delivery.ErrMissingField, o.Name(field))
}

func (o Object) OptString(field string) (string, bool, error) {
	v, ok := o.Get(field)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, fmt.Errorf("%w: %s must be a string", delivery.ErrMalformed, o.Name(field))
	}
	// The decoded strings share one copy of the body (parser.str): what a
	// reader takes out gets its own memory, so that a kept id does not
	// keep the whole body alive.
	return strings.Clone(s), s != "", nil
}

func (o Object) ReqString(field string) (string, error) {
	s, ok, err := o.OptString(field)
	if err == nil && !ok {
		err = o.missing(field)
	}
	return s, err
}

func (o Object) OptObject(field string) (Object, bool, error) {
	v, ok := o.Get(field)
	if !ok {
		return Object{}, false, nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return Object{}, false, fmt.Errorf("%w: %s must be an object", delivery.ErrMalformed, o.Name(field))
	}
	return Object{base: o.path(), field: field, m: m}, true, nil
}

func (o Object) ReqObject(field string) (Object, error) {
	obj, ok, err := o.OptObject(field)
	if err == nil && !ok {
		err = o.missing(field)
	}
	return obj, err
}

// EachObject calls fn with each element, in order, of the list in field
// (absent: none), stopping at the first error; an element that is not an
// object is one.
func (o Object) EachObject(field string, fn func(Object) error) error {
	v, ok := o.Get(field)
	if !ok {
		return nil
	}
	items, isList := v.([]any)
	if !isList {
		return fmt.Errorf("%w: %s must be a list", delivery.ErrMalformed, o.Name(field))
	}
	for i, it := range items {
		m, isObj := it.(map[string]any)
		if !isObj {
			return fmt.Errorf("%w: %s[%d] must be an object", delivery.ErrMalformed, o.Name(field), i)
		}
		if err := fn(Object{base: o.path(), field: field, index: i + 1, m: m}); err != nil {
			return err
		}
	}
	return nil
}

func (o Object) OptBool(field string) (bool, bool, error) {
	v, ok := o.Get(field)
	if !ok {
		return false, false, nil
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, false, fmt.Errorf("%w: %s must be a boolean", delivery.ErrMalformed, o.Name(field))
	}
	return b, true, nil
}

// OptInt reads a non-negative integer in minor units. Only an integer JSON
// number is accepted: 10.5, 1e3, "1000", negatives and values beyond int64
// are rejected rather than rounded or wrapped.
func (o Object) OptInt(field string) (int64, bool, error) {
	v, ok := o.Get(field)
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, fmt.Errorf("%w: %s must be an integer number of minor units", delivery.ErrInvalidAmount, o.Name(field))
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, false, fmt.Errorf("%w: %s %s overflows int64", delivery.ErrInvalidAmount, o.Name(field), n)
		}
		return 0, false, fmt.Errorf("%w: %s %s is not an integer", delivery.ErrInvalidAmount, o.Name(field), n)
	}
	if i < 0 {
		return 0, false, fmt.Errorf("%w: %s %d is negative", delivery.ErrInvalidAmount, o.Name(field), i)
	}
	return i, true, nil
}

func (o Object) ReqInt(field string) (int64, error) {
	i, ok, err := o.OptInt(field)
	if err == nil && !ok {
		err = o.missing(field)
	}
	return i, err
}

func (o Object) ReqCurrency(field string) (money.Currency, error) {
	s, err := o.ReqString(field)
	if err != nil {
		return "", err
	}
	if c, err := Currency(field, s); err == nil {
		return c, nil // the path is joined only for an error
	}
	return Currency(o.Name(field), s)
}
