package paypal

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

func parseSTL(t *testing.T, data string) ([]report.Record, error) {
	t.Helper()
	return providertest.ParseReport(ParseSettlement, data, report.Options{})
}

func stlFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/settlement/STL-20261130.01.009.CSV")
	require.NoError(t, err)
	return string(b)
}

func TestParseSTL(t *testing.T) {
	recs, err := parseSTL(t, stlFixture(t))
	require.NoError(t, err)
	require.Len(t, recs, 7)

	capture := recs[0].Line
	assert.Equal(t, settlement.Line{
		Provider: "paypal", Kind: settlement.KindCharge, SourceType: "T0006", LineID: "42311647XV020574X",
		Key: "42311647XV020574X:T0006:USD", PaymentKey: "42311647XV020574X", CaptureID: "42311647XV020574X",
		Gross: 1000, Fee: 79, Net: 921, Currency: "USD", OriginalAmount: 1000, OriginalCurrency: "USD",
		OccurredAt: time.Date(2026, 11, 30, 10, 0, 3, 0, time.UTC),
	}, capture)
	assert.Equal(t, 5, recs[0].Pos)

	refund := recs[1].Line
	assert.Equal(t, settlement.KindRefund, refund.Kind)
	assert.Equal(t, "1Y107995YT783435V", refund.RefundID)
	assert.Equal(t, "42311647XV020574X", refund.PaymentKey)
	assert.Equal(t, []int64{-250, -20, -230}, []int64{refund.Gross, refund.Fee, refund.Net}, "the fee share returned is a credit")

	eur := recs[2].Line
	assert.Equal(t, money.Currency("EUR"), eur.Currency)
	legOut, legIn := recs[3].Line, recs[4].Line
	assert.Equal(t, settlement.KindFX, legOut.Kind)
	assert.Equal(t, "7KX46322EW0954302", legOut.PaymentKey)
	assert.Equal(t, int64(-4795), legOut.Net)
	assert.Equal(t, int64(5207), legIn.Net)
	assert.Equal(t, money.Currency("USD"), legIn.Currency)

	cb := recs[5].Line
	assert.Equal(t, settlement.KindDispute, cb.Kind)
	assert.Equal(t, DisputeID("42311647XV020574X"), cb.DisputeID, "the id both webhook channels give the dispute of the capture")
	assert.Equal(t, []int64{-750, 2000, -2750}, []int64{cb.Gross, cb.Fee, cb.Net})

	po := recs[6].Line
	assert.Equal(t, settlement.KindPayout, po.Kind)
	assert.Equal(t, "3WD54321EF9876543", po.PayoutID)
	assert.True(t, po.NoWebhook)
	assert.Equal(t, int64(-3148), po.Net)
}

// The capture and the refund carry the ids the webhook adapter uses.
func TestSTLIDsMatchWebhooks(t *testing.T) {
	recs, err := parseSTL(t, stlFixture(t))
	require.NoError(t, err)
	for i, f := range []string{"capture_completed.json", "capture_refunded.json"} {
		raw, err := os.ReadFile("testdata/" + f)
		require.NoError(t, err)
		ev, err := normalize(raw)
		require.NoError(t, err)
		assert.Equal(t, ev.PaymentKey, recs[i].Line.PaymentKey, f)
		assert.Equal(t, ev.Facts[0].BusinessID, recs[i].Line.BusinessID(), f)
		assert.Equal(t, ev.Facts[0].Amount, abs(recs[i].Line.Gross), f)
	}
	raw, err := os.ReadFile("testdata/dispute_created.json")
	require.NoError(t, err)
	ev, err := normalize(raw)
	require.NoError(t, err)
	assert.Equal(t, ev.PaymentKey, recs[5].Line.PaymentKey, "the chargeback row joins the disputed capture's stream")
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func TestParseSTLMalformed(t *testing.T) {
	sh := `"SH",2026/11/30 00:00:00 -0800,2026/11/30 23:59:59 -0800,"X",""` + "\n"
	ch := sh + `"CH","Transaction ID","PayPal Reference ID","Transaction Event Code","Transaction Completion Date","Transaction Debit or Credit","Gross Transaction Amount","Gross Transaction Currency","Fee Debit or Credit","Fee Amount"` + "\n"
	ok := `"SB","A1","","T0006",2026/11/30 02:00:03 -0800,"CR",1000,"USD","DR",79` + "\n"
	for _, c := range []struct {
		name, body, column string
		line               int
	}{
		{"signed amount", ch + ok + `"SB","A2","","T0006",2026/11/30 02:00:03 -0800,"CR",-1000,"USD","DR",79` + "\n", "Gross Transaction Amount", 4},
		{"decimal amount", ch + ok + `"SB","A2","","T0006",2026/11/30 02:00:03 -0800,"CR",10.00,"USD","DR",79` + "\n", "Gross Transaction Amount", 4},
		{"bad direction", ch + ok + `"SB","A2","","T0006",2026/11/30 02:00:03 -0800,"XX",1000,"USD","DR",79` + "\n", "Transaction Debit or Credit", 4},
		{"fee without direction", ch + ok + `"SB","A2","","T0006",2026/11/30 02:00:03 -0800,"CR",1000,"USD","",79` + "\n", "Fee Debit or Credit", 4},
		{"refund without reference", ch + ok + `"SB","A2","","T1107",2026/11/30 02:00:03 -0800,"DR",100,"USD","",0` + "\n", "PayPal Reference ID", 4},
		{"bad date", ch + ok + `"SB","A2","","T0006",30.11.2026,"CR",1000,"USD","DR",79` + "\n", "Transaction Completion Date", 4},
		{"bad code", ch + ok + `"SB","A2","","0006",2026/11/30 02:00:03 -0800,"CR",1000,"USD","DR",79` + "\n", "Transaction Event Code", 4},
		{"body before header", sh + ok, "", 2},
		{"header without amounts", `"CH","Transaction ID","Transaction Event Code"` + "\n", "Transaction Debit or Credit", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseSTL(t, c.body)
			var pe *report.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.line, pe.Line, err.Error())
			assert.Equal(t, c.column, pe.Column, err.Error())
		})
	}
}

func TestParseSTLUnknownColumnsAndRecords(t *testing.T) {
	in := "\uFEFF" + `"RH",2026/12/01 02:44:19 -0800,"A","X",010` + "\n" +
		`"CH","Brand New Column","Transaction Event Code","Gross Transaction Currency","Gross Transaction Amount","Transaction Debit or Credit","Transaction Initiation Date","Transaction ID"` + "\n" +
		`"ZZ","something new"` + "\n" +
		`"SH",2026/11/30 00:00:00 -0800,2026/11/30 23:59:59 -0800,"X",""` + "\n" +
		`"SB","x","T0400","USD",500,"DR",2026/11/30 23:00:00 -0800,"W1"` + "\n" + `"SC",1` + "\n" + `"FF",1` + "\n"
	recs, err := parseSTL(t, in)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, int64(-500), recs[0].Line.Net)
	assert.Equal(t, "W1", recs[0].Line.PayoutID)
}

// The report footer's Beginning and Ending Balance per currency are stated
// balances of provider:paypal:balance: the beginning just before the
// report's period, the ending at its end; a DR balance is negative. A
// section footer states nothing (RF spans every account of the report).
func TestSTLStatesItsBalances(t *testing.T) {
	var got []report.Stated
	collect := func(s report.Stated) error { got = append(got, s); return nil }
	data := strings.Replace(stlFixture(t), `"RF","EUR",5000,4795,0,205,"CR",0,"CR",0,`, `"RF","EUR",5000,4795,0,205,"CR",1200,"DR",35,`, 1)
	_, err := providertest.ParseReport(ParseSettlement, data, report.Options{Stated: collect})
	require.NoError(t, err)
	pst := time.FixedZone("PST", -8*3600)
	begin := time.Date(2026, 11, 30, 0, 0, 0, 0, pst).Add(-time.Microsecond).UTC()
	end := time.Date(2026, 11, 30, 23, 59, 59, 0, pst).UTC()
	src := "paypal settlement report"
	assert.Equal(t, []report.Stated{
		{Account: "provider:paypal:balance", Currency: "USD", AsOf: begin, Amount: 0, Source: src},
		{Account: "provider:paypal:balance", Currency: "USD", AsOf: end, Amount: 0, Source: src},
		{Account: "provider:paypal:balance", Currency: "EUR", AsOf: begin, Amount: 1200, Source: src},
		{Account: "provider:paypal:balance", Currency: "EUR", AsOf: end, Amount: -35, Source: src},
	}, got)

	// A balance that is neither CR nor DR is refused, naming the field.
	bad := strings.Replace(stlFixture(t), `"RF","EUR",5000,4795,0,205,"CR",0,"CR",0,`, `"RF","EUR",5000,4795,0,205,"CR",0,"XX",0,`, 1)
	_, err = providertest.ParseReport(ParseSettlement, bad, report.Options{Stated: collect})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "field 8")
}
