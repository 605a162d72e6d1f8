// Package payload reads the fields of provider webhook bodies for the
// adapters under adapters/providers. Every wrong shape becomes one of the
// provider errors the HTTP layer answers with 400 (delivery.ErrMalformed,
// delivery.ErrMissingField, delivery.ErrInvalidAmount,
// money.ErrUnknownCurrency), naming the field by its path from the payload
// root ("data.object.amount"), so a sender can tell what to fix.
package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// DecodeBody decodes raw, which must be exactly one JSON value, into v (a
// provider's typed envelope). A key repeated in one object at any depth is
// refused (ErrDuplicateKey), and so are keys differing only in case: the
// struct decoder would take either for the same field, keeping the last.
func DecodeBody(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: body: %v", delivery.ErrMalformed, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: body: data after the JSON value", delivery.ErrMalformed)
	}
	return UniqueKeys(raw, KeyRule{Fold: true})
}

// DecodeMember decodes the member field of an envelope, kept raw until the
// envelope's type said what it holds, into v. Absent and null are missing.
// Repeated keys are refused as by DecodeBody (which has usually checked them
// already, with the rest of the body).
func DecodeMember(raw json.RawMessage, v any, field string) error {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %s: %v", delivery.ErrMalformed, field, err)
	}
	return uniqueKeys(raw, field, KeyRule{Fold: true})
}

// RFC3339 reads the required time field, sent as text s, in UTC.
func RFC3339(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q is not RFC 3339", delivery.ErrMalformed, field, s)
	}
	return t.UTC(), nil
}

// Currency reads the required currency field, sent as the code s.
func Currency(field, s string) (money.Currency, error) {
	if s == "" {
		return "", fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
	}
	c, err := money.ParseCurrency(s)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return c, nil
}

// Decimal is a money object that states its amount as a decimal string in
// major units ("10.00") beside a currency code, as Circle and PayPal send
// it. The keys are the two members' JSON names, for errors.
type Decimal struct {
	ValueKey, Value       string
	CurrencyKey, Currency string
}

// Parse converts d, found at field, exactly into non-negative minor units of
// its currency: more decimals than the currency has are refused, not rounded.
func (d Decimal) Parse(field string) (int64, money.Currency, error) {
	cur, err := Currency(field+"."+d.CurrencyKey, d.Currency)
	if err != nil {
		return 0, "", err
	}
	name := field + "." + d.ValueKey
	if d.Value == "" {
		return 0, "", fmt.Errorf("%w: %s", delivery.ErrMissingField, name)
	}
	v, err := money.ParseMajor(d.Value, cur)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %s: %w", delivery.ErrInvalidAmount, name, err)
	}
	if v < 0 {
		return 0, "", fmt.Errorf("%w: %s %q is negative", delivery.ErrInvalidAmount, name, d.Value)
	}
	return v, cur, nil
}
