package params_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/params"
)

func TestParamsKeepTheFirstError(t *testing.T) {
	p := params.New(url.Values{"currency": {"usd"}, "from": {"2026-11-30"}, "to": {"2026-11-30"},
		"at": {"2026-01-02T10:00:00 01:00"}, "status": {"open"}})
	assert.Equal(t, "USD", p.Currency("currency"))
	assert.Equal(t, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), p.Day("from", nil, false))
	assert.Equal(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), p.Day("to", nil, true), "an end date is inclusive")
	assert.True(t, p.Time("at").Equal(time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)), "a '+' sent as a space")
	assert.Equal(t, "open", p.OneOf("status", "open", "resolved"))
	assert.Equal(t, 100, p.Limit(100, 1000))
	require.NoError(t, p.Err())

	bad := params.New(url.Values{"limit": {"0"}, "currency": {"dollars"}})
	bad.Limit(100, 1000)
	bad.Currency("currency")
	require.ErrorIs(t, bad.Err(), params.ErrBadParameter)
	assert.Contains(t, bad.Err().Error(), "limit: must be an integer from 1 to 1000")
}
