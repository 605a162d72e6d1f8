package payload_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Every error wraps the sentinel the HTTP layer maps to 400 and names the
// field by its full path.
func TestErrorsNameTheField(t *testing.T) {
	root, err := payload.DecodeObject([]byte(`{"data":{"amount":-1,"list":[{"id":7},"x"],"cur":"XXQ","flag":"yes"}}`))
	require.NoError(t, err)
	data, err := root.ReqObject("data")
	require.NoError(t, err)
	_, missing := data.ReqString("nope")
	_, negative := data.ReqInt("amount")
	_, currency := data.ReqCurrency("cur")
	_, _, notBool := data.OptBool("flag")
	var ids []string
	listErr := data.EachObject("list", func(o payload.Object) error {
		id, _, err := o.OptString("id")
		ids = append(ids, id)
		return err
	})
	_, _, decimal := payload.Decimal{ValueKey: "value", Value: "1.001", CurrencyKey: "currency_code", Currency: "USD"}.Parse("resource.amount")
	_, rfc := payload.RFC3339("created_at", "today")
	var v struct{ A int }
	member := payload.DecodeMember([]byte(`"x"`), &v, "resource")
	for _, c := range []struct {
		err    error
		target error
		field  string
	}{
		{missing, delivery.ErrMissingField, "data.nope"},
		{negative, delivery.ErrInvalidAmount, "data.amount"},
		{currency, money.ErrUnknownCurrency, "data.cur"},
		{notBool, delivery.ErrMalformed, "data.flag"},
		{listErr, delivery.ErrMalformed, "data.list[0].id"},
		{decimal, delivery.ErrInvalidAmount, "resource.amount.value"},
		{rfc, delivery.ErrMalformed, "created_at"},
		{member, delivery.ErrMalformed, "resource"},
		{payload.DecodeBody([]byte(`{} {}`), &v), delivery.ErrMalformed, "body"},
		{payload.DecodeMember([]byte(`null`), &v, "notification"), delivery.ErrMissingField, "notification"},
	} {
		if assert.ErrorIs(t, c.err, c.target) {
			assert.Containsf(t, fmtErr(c.err), c.field, "err %v does not name %s", c.err, c.field)
		}
	}
	assert.Len(t, ids, 1, "EachObject went on after an error")
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDecimalIsExact(t *testing.T) {
	for _, c := range []struct {
		value, cur string
		want       int64
		ok         bool
	}{
		{"10.00", "USD", 1000, true},
		{"0.59", "USD", 59, true},
		{"1500", "JPY", 1500, true},
		{"15.5", "JPY", 0, false},
		{"-1.00", "USD", 0, false},
		{"1e3", "USD", 0, false},
		{"", "USD", 0, false},
		{"1.00", "", 0, false},
	} {
		got, cur, err := payload.Decimal{ValueKey: "amount", Value: c.value, CurrencyKey: "currency", Currency: c.cur}.Parse("notification.amount")
		if c.ok {
			assert.NoErrorf(t, err, "%q %q", c.value, c.cur)
			assert.Equalf(t, c.cur, string(cur), "%q %q: currency", c.value, c.cur)
		} else {
			assert.Errorf(t, err, "%q %q", c.value, c.cur)
		}
		assert.Equalf(t, c.want, got, "%q %q: amount", c.value, c.cur)
	}
}
