package period_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/period"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func TestParseAndFormat(t *testing.T) {
	for _, s := range []string{"2026-01", "2026-12", "0001-01", "9999-12"} {
		p, err := period.Parse(s)
		require.NoError(t, err, s)
		assert.Equal(t, s, p.String())
	}
	for _, s := range []string{"", "2026-1", "2026-13", "2026-00", "26-01", "2026/01", "2026-01-01", "0000-01", "2026-0a", "+026-01", " 2026-01"} {
		_, err := period.Parse(s)
		assert.ErrorIs(t, err, period.ErrInvalidPeriod, s)
	}
	assert.Equal(t, "", period.Period{}.String())
	assert.True(t, period.Period{}.IsZero())
}

func TestNextPrevCompare(t *testing.T) {
	dec := period.MustParse("2026-12")
	assert.Equal(t, "2027-01", dec.Next().String())
	assert.Equal(t, "2026-11", dec.Prev().String())
	assert.Equal(t, "2025-12", period.MustParse("2026-01").Prev().String())
	assert.True(t, dec.Prev().Before(dec))
	assert.True(t, dec.Next().After(dec))
	assert.Equal(t, 0, dec.Compare(period.MustParse("2026-12")))
}

// The month of an instant depends on the reporting zone: 2026-12-01T02:00Z
// is still November in Los Angeles (18:00 on Nov 30), and 2026-11-30T12:00Z
// is already December in Auckland (01:00 on Dec 1, NZDT = UTC+13).
func TestOfAtMonthBoundariesInNonUTCZones(t *testing.T) {
	la, akl := zone(t, "America/Los_Angeles"), zone(t, "Pacific/Auckland")
	cases := []struct {
		at   string
		loc  *time.Location
		want string
	}{
		{"2026-12-01T02:00:00Z", time.UTC, "2026-12"},
		{"2026-12-01T02:00:00Z", la, "2026-11"},
		{"2026-12-01T07:59:59.999999999Z", la, "2026-11"}, // PST = UTC-8
		{"2026-12-01T08:00:00Z", la, "2026-12"},
		{"2026-11-30T10:59:59Z", akl, "2026-11"},
		{"2026-11-30T11:00:00Z", akl, "2026-12"}, // NZDT = UTC+13
		{"2026-11-30T12:00:00Z", time.UTC, "2026-11"},
		{"2026-12-31T23:30:00Z", akl, "2027-01"},
		{"2027-01-01T05:00:00Z", la, "2026-12"},
	}
	for _, c := range cases {
		at, err := time.Parse(time.RFC3339Nano, c.at)
		require.NoError(t, err)
		assert.Equal(t, c.want, period.Of(at, c.loc).String(), "%s in %s", c.at, c.loc)
	}
	nov := period.MustParse("2026-11")
	assert.Equal(t, "2026-12-01T08:00:00Z", nov.End(la).UTC().Format(time.RFC3339))
	assert.Equal(t, "2026-11-30T11:00:00Z", nov.End(akl).UTC().Format(time.RFC3339))
	// March in Los Angeles starts in PST and ends in PDT.
	mar := period.MustParse("2026-03")
	assert.Equal(t, "2026-03-01T08:00:00Z", mar.Start(la).UTC().Format(time.RFC3339))
	assert.Equal(t, "2026-04-01T07:00:00Z", mar.End(la).UTC().Format(time.RFC3339))
	assert.Equal(t, mar, period.Of(mar.Start(la), la))
	assert.Equal(t, mar, period.Of(mar.End(la).Add(-time.Nanosecond), la))
}

func TestPeriodAsText(t *testing.T) {
	b, err := json.Marshal(struct{ P, Z period.Period }{P: period.MustParse("2026-11")})
	require.NoError(t, err)
	assert.JSONEq(t, `{"P":"2026-11","Z":""}`, string(b))
	var v struct{ P, Z period.Period }
	require.NoError(t, json.Unmarshal(b, &v))
	assert.Equal(t, period.MustParse("2026-11"), v.P)
	assert.True(t, v.Z.IsZero())
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"P":"2026-13"}`), &v), period.ErrInvalidPeriod)
}
