// The same small JSON reader as the stripe package's, kept separate so each
// provider package stands alone.

package standard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/provider"
)

// object is one decoded JSON object plus its path from the payload root, so
// that every error names the exact field ("data.object.amount").
//
// The payload is decoded generically (with json.Number) rather than into
// typed structs: encoding/json accepts a quoted number into a json.Number
// field and its errors do not name the field's path; we want each wrong shape
// reported, by name, as the 400 it is.
type object struct {
	path string
	m    map[string]any
}

// decodeObject decodes raw as exactly one JSON object, numbers kept exact.
func decodeObject(raw []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return object{}, fmt.Errorf("%w: invalid JSON: %v", provider.ErrMalformed, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return object{}, fmt.Errorf("%w: invalid JSON: data after the top-level value", provider.ErrMalformed)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return object{}, fmt.Errorf("%w: payload is not a JSON object", provider.ErrMalformed)
	}
	return object{m: m}, nil
}

func (o object) name(field string) string {
	if o.path == "" {
		return field
	}
	return o.path + "." + field
}

// get returns the value, treating JSON null as absent.
func (o object) get(field string) (any, bool) {
	v, ok := o.m[field]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func (o object) optString(field string) (string, bool, error) {
	v, ok := o.get(field)
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", false, fmt.Errorf("%w: %s must be a string", provider.ErrMalformed, o.name(field))
	}
	return s, s != "", nil
}

func (o object) reqString(field string) (string, error) {
	s, ok, err := o.optString(field)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: %s", provider.ErrMissingField, o.name(field))
	}
	return s, nil
}

func (o object) optObject(field string) (object, bool, error) {
	v, ok := o.get(field)
	if !ok {
		return object{}, false, nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return object{}, false, fmt.Errorf("%w: %s must be an object", provider.ErrMalformed, o.name(field))
	}
	return object{path: o.name(field), m: m}, true, nil
}

func (o object) reqObject(field string) (object, error) {
	obj, ok, err := o.optObject(field)
	if err != nil {
		return object{}, err
	}
	if !ok {
		return object{}, fmt.Errorf("%w: %s", provider.ErrMissingField, o.name(field))
	}
	return obj, nil
}

// optInt reads a non-negative integer in minor units. Only an integer JSON
// number is accepted: 10.5, 1e3, "1000", negatives and values beyond int64
// are rejected rather than rounded or wrapped.
func (o object) optInt(field string) (int64, bool, error) {
	v, ok := o.get(field)
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, fmt.Errorf("%w: %s must be an integer number of minor units", provider.ErrInvalidAmount, o.name(field))
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, false, fmt.Errorf("%w: %s %s overflows int64", provider.ErrInvalidAmount, o.name(field), n)
		}
		return 0, false, fmt.Errorf("%w: %s %s is not an integer", provider.ErrInvalidAmount, o.name(field), n)
	}
	if i < 0 {
		return 0, false, fmt.Errorf("%w: %s %d is negative", provider.ErrInvalidAmount, o.name(field), i)
	}
	return i, true, nil
}

func (o object) reqInt(field string) (int64, error) {
	i, ok, err := o.optInt(field)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: %s", provider.ErrMissingField, o.name(field))
	}
	return i, nil
}

func (o object) reqCurrency(field string) (money.Currency, error) {
	s, err := o.reqString(field)
	if err != nil {
		return "", err
	}
	c, err := money.ParseCurrency(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", o.name(field), err)
	}
	return c, nil
}
