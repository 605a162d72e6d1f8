package assertion_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
)

var now = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func statement(points ...assertion.Point) assertion.Statement {
	return assertion.Statement{Account: "provider:alipay:balance", Currency: "CNY", Source: "alipay account bill", Points: points}
}

func TestStatementRecordsEachPointOnce(t *testing.T) {
	p1 := assertion.Point{Key: "l1", AsOf: now, Amount: 100}
	p2 := assertion.Point{Key: "l2", AsOf: now.Add(time.Minute), Amount: 250}
	evs, err := assertion.DecideStatement(assertion.State{}, statement(p1, p2), now)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	st := assertion.Fold(evs)
	assert.Equal(t, "alipay", evs[0].(assertion.Stated).Provider)

	again, err := assertion.DecideStatement(st, statement(p1, p2), now)
	require.NoError(t, err)
	assert.Empty(t, again, "a file imported again states nothing new")

	p2.Amount = 251
	_, err = assertion.DecideStatement(st, statement(p2), now)
	assert.ErrorIs(t, err, assertion.ErrConflict)
}

func TestBadStatementsNameTheField(t *testing.T) {
	for field, s := range map[string]assertion.Statement{
		"account":  {Account: "revenue:sales", Currency: "USD", Source: "x", Points: []assertion.Point{{Key: "k", AsOf: now}}},
		"currency": {Account: "provider:stripe:balance", Currency: "XAU", Source: "x", Points: []assertion.Point{{Key: "k", AsOf: now}}},
		"as_of":    {Account: "provider:stripe:balance", Currency: "USD", Source: "x", Points: []assertion.Point{{Key: "k"}}},
		"amount":   {Account: "provider:stripe:balance", Currency: "USD", Source: "x", Points: []assertion.Point{{Key: "k", AsOf: now, Amount: 1 << 62}}},
		"provider": {Provider: "adyen", Account: "provider:stripe:balance", Currency: "USD", Source: "x", Points: []assertion.Point{{Key: "k", AsOf: now}}},
	} {
		_, err := assertion.DecideStatement(assertion.State{}, s, now)
		var fe *assertion.FieldError
		require.ErrorAs(t, err, &fe, field)
		assert.Equal(t, field, fe.Field)
		assert.ErrorIs(t, err, assertion.ErrInvalid)
	}
}

func TestAdjustmentsBalanceAndReverseOnce(t *testing.T) {
	ps := []ledger.Posting{{Account: "expenses:writeoffs", Currency: "USD", Amount: 100}, {Account: "provider:stripe:balance", Currency: "USD", Amount: -100}}
	cmd := assertion.Adjustment{ID: uuid.New(), ItemID: "i", EffectiveAt: now, Postings: ps, Actor: "alice", Note: "n"}
	evs, err := assertion.DecideAdjustment(assertion.State{}, cmd, now)
	require.NoError(t, err)
	st := assertion.Fold(evs)

	bad := cmd
	bad.Postings = []ledger.Posting{ps[0], {Account: "provider:stripe:balance", Currency: "USD", Amount: -99}}
	_, err = assertion.DecideAdjustment(st, bad, now)
	assert.ErrorIs(t, err, assertion.ErrInvalid)
	bad.Postings = []ledger.Posting{{Account: "expenses:whatever", Currency: "USD", Amount: 100}, ps[1]}
	var fe *assertion.FieldError
	_, err = assertion.DecideAdjustment(st, bad, now)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "postings[0].account", fe.Field)

	rev := assertion.Adjustment{ID: uuid.New(), ItemID: "i", Reverses: cmd.ID, EffectiveAt: now, Actor: "alice", Note: "wrong"}
	evs, err = assertion.DecideAdjustment(st, rev, now)
	require.NoError(t, err)
	assert.Equal(t, int64(-100), evs[0].(assertion.Adjusted).Postings[0].Amount)
	st.Apply(evs[0])
	_, err = assertion.DecideAdjustment(st, rev, now)
	assert.ErrorIs(t, err, assertion.ErrConflict)
}

func TestCodecRoundTrips(t *testing.T) {
	for _, e := range []assertion.Event{
		assertion.Stated{Provider: "stripe", Account: "provider:stripe:balance", Currency: "USD", Source: "s", At: now,
			Points: []assertion.Point{{Key: "k", AsOf: now, Amount: 5}}},
		assertion.Opened{ID: uuid.New(), Provider: "stripe", Account: "provider:stripe:balance", Currency: "USD", AsOf: now, Amount: 7, Actor: "a", Note: "n", At: now},
		assertion.Adjusted{ID: uuid.New(), ItemID: "i", Reverses: uuid.New(), EffectiveAt: now, Actor: "a", Note: "n", At: now,
			Postings: []ledger.Posting{{Account: "expenses:writeoffs", Currency: "USD", Amount: 1}}},
		assertion.ItemResolved{Kind: "balance_mismatch", Key: "k", Actor: "a", Note: "n", At: now},
		assertion.ItemReopened{Kind: "balance_mismatch", Key: "k", Actor: "a", Note: "n", At: now},
	} {
		typ, data, err := assertion.Encode(e)
		require.NoError(t, err)
		back, err := assertion.Decode(typ, data)
		require.NoError(t, err)
		assert.Equal(t, e, back)
	}
}

func TestAccountsProvidersAndBanksState(t *testing.T) {
	for account, want := range map[string]string{
		"provider:stripe:balance": "stripe", "provider:adyen:reserve": "adyen", "bank:main": "bank", "bank:ING-EUR.1": "bank",
	} {
		p, ok := assertion.ProviderOf(account)
		assert.True(t, ok, account)
		assert.Equal(t, want, p, account)
	}
	for _, account := range []string{"bank:payouts", "revenue:sales", "provider:stripe:fees", "bank:", "bank:a/b"} {
		_, ok := assertion.ProviderOf(account)
		assert.False(t, ok, account)
	}
	assert.True(t, assertion.InChart("suspense:bank:ING-EUR.1"))
	assert.True(t, assertion.InChart("equity:opening_balances"))
	assert.False(t, assertion.InChart("expenses:whatever"))
}

func TestBatchScopesAreStatedNotPosted(t *testing.T) {
	acct := assertion.BatchAccount("adyen", "OnceLedgerECOM/41/EUR")
	assert.Equal(t, "provider:adyen:batch:OnceLedgerECOM/41/EUR", acct)
	p, ok := assertion.ProviderOf(acct)
	assert.True(t, ok)
	assert.Equal(t, "adyen", p)
	assert.True(t, assertion.IsBatchAccount(acct))
	assert.False(t, assertion.IsBatchAccount("provider:adyen:balance"))
	assert.False(t, assertion.InChart(acct), "nothing posts to a batch's scope")
	_, err := assertion.DecideOpening(assertion.State{}, assertion.Opening{ID: uuid.New(), Account: acct, Currency: "EUR",
		AsOf: now, Amount: 1, Actor: "a", Note: "n"}, now)
	var fe *assertion.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "account", fe.Field)
}
