package main_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/payment"
)

// TestDuplicateAYearApart: a redelivery a year after the first arrival is
// still a duplicate, and the same fact under a new delivery id still one
// fact. docs/scaling.md keeps webhook_inbox and events unpartitioned
// because a time-partitioned table puts the time into every unique key,
// and the dedup judge (provider, dedup key) would then only judge within a
// partition; this test is what such a change would have to keep passing.
// The first arrival is aged by a year in the database (inbox times and,
// on the Postgres store, the event's recorded_at), and the server is
// restarted so nothing of it is held in memory.
func TestDuplicateAYearApart(t *testing.T) { eachStore(t, testDuplicateAYearApart) }

func testDuplicateAYearApart(t *testing.T, s *stack) {
	pay, id := uniq("pay"), uniq("msg")
	stream := "payment-standard-" + pay
	body := captureBody(pay, "cap_1", 1000, 30)
	require.Equal(t, "accepted", s.sendStandard(id, body).outcome(t))

	_, err := s.pool.Exec(t.Context(), `UPDATE webhook_inbox
		SET first_seen_at = first_seen_at - interval '1 year', last_seen_at = last_seen_at - interval '1 year'
		WHERE provider = 'standard' AND dedup_key = $1`, id)
	require.NoError(t, err)
	if s.kind == onPostgres {
		_, err = s.pool.Exec(t.Context(), `UPDATE events SET recorded_at = recorded_at - interval '1 year' WHERE stream_id = $1`, stream)
		require.NoError(t, err)
	}
	s = s.restart()

	again := s.sendStandard(id, body)
	require.Equal(t, http.StatusOK, again.Status, again.Body)
	assert.Equal(t, "duplicate", again.outcome(t), "the same delivery id a year later")

	// The provider's new event for the same capture (a new delivery id):
	// the stream already holds the capture, so it adds nothing.
	other := s.sendStandard(uniq("msg"), body)
	require.Equal(t, http.StatusOK, other.Status, other.Body)

	// The same id with other facts a year later: a conflict, not a new fact.
	changed := s.sendStandard(id, captureBody(pay, "cap_1", 9000, 30))
	require.Equal(t, http.StatusOK, changed.Status, changed.Body)
	assert.Equal(t, "duplicate", changed.outcome(t))

	assert.Equal(t, map[string]int64{
		"provider:standard:balance USD": 970, "expenses:fees:standard USD": 30, "revenue:sales USD": -1000,
	}, s.balances(stream), "one capture, a year and three deliveries later")
	assert.Equal(t, []string{payment.TypeCaptured, payment.TypeFlagged}, s.streamTypes(stream),
		"the changed redelivery is flagged, once")
	assert.EqualValues(t, 1, s.scalar(`SELECT count(*) FROM webhook_inbox WHERE provider = 'standard' AND dedup_key = $1`, id))
}
