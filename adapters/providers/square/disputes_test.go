package square

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Square's DisputeState: the INQUIRY_* states hold no funds; a chargeback's
// states (EVIDENCE_REQUIRED, PROCESSING) have the amount taken; WON returns
// it and INQUIRY_CLOSED ends an inquiry with nothing taken; LOST and
// ACCEPTED keep it.
func TestSquareDisputeStatesFollowTheFunds(t *testing.T) {
	a := mustNew(t, []string{testKey}, testURL)
	for _, tc := range []struct {
		typ, state string
		want       delivery.Kind
	}{
		{"dispute.created", "INQUIRY_EVIDENCE_REQUIRED", delivery.KindDisputeInquiry},
		{"dispute.state.updated", "INQUIRY_PROCESSING", delivery.KindDisputeInquiry},
		{"dispute.state.updated", "INQUIRY_CLOSED", delivery.KindDisputeWon},
		{"dispute.created", "EVIDENCE_REQUIRED", delivery.KindDisputeOpened},
		{"dispute.state.changed", "PROCESSING", delivery.KindDisputeOpened},
		{"dispute.state.updated", "WON", delivery.KindDisputeWon},
		{"dispute.state.updated", "LOST", delivery.KindDisputeLost},
		{"dispute.state.changed", "ACCEPTED", delivery.KindDisputeLost},
	} {
		body := string(providertest.Fixture(t, "dispute_created.json"))
		body = strings.Replace(body, `"type": "dispute.created"`, `"type": "`+tc.typ+`"`, 1)
		body = strings.Replace(body, `"state": "EVIDENCE_REQUIRED"`, `"state": "`+tc.state+`"`, 1)
		evs, err := a.Parse(req(Sign(testKey, testURL, []byte(body)), []byte(body)))
		require.NoError(t, err, tc.state)
		require.Len(t, evs[0].Facts, 1, tc.state)
		assert.Equal(t, tc.want, evs[0].Facts[0].Kind, tc.state)
		assert.Equal(t, "XDgyFu7yo1E2S5lQGGpYn", evs[0].Facts[0].BusinessID)
	}
}
