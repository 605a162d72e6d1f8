package main_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/adyen"
)

// Adyen: the Settlement details report (settlement_detail_report_batch_N,
// docs.adyen.com/reporting/settlement-detail-report): one CSV per merchant
// account and batch; amounts unsigned major units, the column giving the
// direction (Gross/Net Debit or Credit); the cost columns (Commission,
// Markup, Scheme Fees, Interchange) unsigned in the net currency, "net
// credit = gross credit × rate − fees", "net debit = gross debit × rate +
// fees"; one MerchantPayout line per batch and net currency (a Net Credit
// there: Adyen debited the bank). Lines without references
// (Balancetransfer, DepositCorrection, Fee) are told apart by the rest.
// Webhooks: notification items in minor units, HMAC-signed in the body.

var adyenColumns = []string{"Company Account", "Merchant Account", "Psp Reference", "Merchant Reference", "Payment Method",
	"Creation Date", "TimeZone", "Type", "Modification Reference", "Gross Currency", "Gross Debit (GC)", "Gross Credit (GC)",
	"Exchange Rate", "Net Currency", "Net Debit (NC)", "Net Credit (NC)", "Commission (NC)", "Markup (NC)", "Scheme Fees (NC)",
	"Interchange (NC)", "Payment Method Variant", "Modification Merchant Reference", "Batch Number", "Reserved4", "Reserved5",
	"Booking Date", "Booking Date TimeZone", "Metadata"}

// adyenRow is one report line by column name.
type adyenRow map[string]string

func writeAdyenReport(rows []adyenRow) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(adyenColumns)
	for _, r := range rows {
		rec := make([]string, len(adyenColumns))
		for i, c := range adyenColumns {
			rec[i] = r[c]
		}
		_ = w.Write(rec)
	}
	w.Flush()
	return b.Bytes()
}

func readAdyenReport(data []byte) ([]adyenRow, error) {
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) == 0 {
		return nil, fmt.Errorf("not a CSV report: %v", err)
	}
	var rows []adyenRow
	for _, rec := range recs[1:] {
		r := adyenRow{}
		for i, h := range recs[0] {
			if i < len(rec) && rec[i] != "" {
				r[h] = rec[i]
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// adyenAmounts reads a row's signed gross (gross currency), signed net and
// costs (net currency), in minor units.
func adyenAmounts(r adyenRow) (gross, net, costs int64, err error) {
	read := func(col, cur string) int64 {
		v, e := parseMinorText(r[col], isoExp(cur))
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	gc, nc := r["Gross Currency"], r["Net Currency"]
	gross = read("Gross Credit (GC)", gc) - read("Gross Debit (GC)", gc)
	net = read("Net Credit (NC)", nc) - read("Net Debit (NC)", nc)
	for _, c := range []string{"Commission (NC)", "Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)"} {
		costs += read(c, nc)
	}
	return gross, net, costs, err
}

type adyenGen struct {
	r     *rand.Rand
	run   string
	n     int
	batch string
	at    time.Time
	rows  []adyenRow
	hooks []propDelivery
	m     *propModel
	curs  map[string]bool
	pays  []adyenPaid // the payments settled, for their payment costs
}

type adyenPaid struct{ psp, cur string }

func newAdyenGen(r *rand.Rand, run string) *adyenGen {
	return &adyenGen{r: r, run: run, batch: fmt.Sprint(40 + r.IntN(60)), at: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC),
		m: newPropModel(), curs: map[string]bool{}}
}

func (g *adyenGen) psp() string {
	g.n++
	return fmt.Sprintf("%s%06d", strings.ToUpper(strings.ReplaceAll(g.run, "_", "")), g.n)
}

func (g *adyenGen) payoutID(cur string) string { return adyenMerchant + "/" + g.batch + "/" + cur }

// hook sends one notification item, signed as Adyen signs it.
func (g *adyenGen) hook(code, psp, orig, cur string, value int64) {
	sig, err := adyen.Sign(adyenTestKey, psp, orig, adyenMerchant, "order-"+orig, value, cur, code, "true")
	if err != nil {
		panic(err)
	}
	item := map[string]any{
		"additionalData": map[string]any{"hmacSignature": sig}, "amount": map[string]any{"value": value, "currency": cur},
		"eventCode": code, "eventDate": g.at.Format(time.RFC3339), "merchantAccountCode": adyenMerchant,
		"merchantReference": "order-" + orig, "pspReference": psp, "originalReference": orig, "success": "true",
	}
	body := mustJSON(map[string]any{"live": "false", "notificationItems": []any{map[string]any{"NotificationRequestItem": item}}})
	g.hooks = append(g.hooks, propDelivery{name: "adyen " + code, path: "/webhooks/adyen", body: body,
		sign: func([]byte) http.Header { return nil }})
}

// line adds a report line: gross in gc (signed), net in nc (signed), the
// commission in nc; it is counted in its currency's payout.
func (g *adyenGen) line(typ, psp, mod, gc string, gross int64, rate string, nc string, net, commission int64) {
	g.at = g.at.Add(time.Duration(1+g.r.IntN(90)) * time.Minute)
	r := adyenRow{"Company Account": "OnceLedger", "Merchant Account": adyenMerchant, "Psp Reference": psp,
		"Creation Date": g.at.Format(time.DateTime), "TimeZone": "UTC", "Type": typ, "Modification Reference": mod,
		"Net Currency": nc, "Batch Number": g.batch, "Booking Date": g.at.Format(time.DateTime), "Booking Date TimeZone": "UTC"}
	if psp != "" {
		r["Merchant Reference"] = "order-" + psp
	}
	if gc != "" {
		r["Gross Currency"], r["Exchange Rate"] = gc, rate
		col := "Gross Credit (GC)"
		if gross < 0 {
			col, gross = "Gross Debit (GC)", -gross
		}
		r[col] = minorText(gross, isoExp(gc))
	}
	col := "Net Credit (NC)"
	if net < 0 {
		col = "Net Debit (NC)"
	}
	r[col] = minorText(abs64(net), isoExp(nc))
	if commission != 0 {
		r["Commission (NC)"] = minorText(commission, isoExp(nc))
	}
	g.rows = append(g.rows, r)
	if typ != "MerchantPayout" {
		g.curs[nc] = true
		g.m.line(g.payoutID(nc), net)
	}
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

type adyenPayment struct {
	cur         string
	amount, fee int64
	// fx: settled in settledCur for settled (minor units) at rate
	settledCur string
	settled    int64
	rate       string
	refund     int64
	// refundReversed: the refund came back (RefundedReversed), told by
	// REFUNDED_REVERSED too only with reversedHook (issue 34).
	refundReversed, reversedHook bool
	// quietWin: a won dispute's reinstatement is told by the report's
	// ChargebackReversed alone.
	quietWin   bool
	dispute    string
	disputeFee int64
	noWebhook  bool
}

func (g *adyenGen) payment(p adyenPayment) {
	pay, capture := g.psp(), g.psp()
	if !p.noWebhook {
		g.hook("CAPTURE", capture, pay, p.cur, p.amount)
	}
	g.m.post("provider:adyen:balance", "revenue:sales", p.cur, p.amount)
	nc, gross := p.cur, p.amount
	if p.settledCur != "" {
		nc, gross = p.settledCur, p.settled
		// docs/reference.md: the conversion through fx:trading.
		g.m.post("provider:adyen:balance", "fx:trading", nc, gross)
		g.m.post("fx:trading", "provider:adyen:balance", p.cur, p.amount)
	}
	rate := "1"
	if p.rate != "" {
		rate = p.rate
	}
	g.line("Settled", pay, capture, p.cur, p.amount, rate, nc, gross-p.fee, p.fee)
	g.pays = append(g.pays, adyenPaid{pay, nc})
	g.m.post("expenses:fees:adyen", "provider:adyen:balance", nc, p.fee)
	if p.refund > 0 {
		re := g.psp()
		g.hook("REFUND", re, pay, p.cur, p.refund)
		g.line("Refunded", pay, re, p.cur, -p.refund, "1", p.cur, -p.refund, 0)
		g.m.post("revenue:refunds", "provider:adyen:balance", p.cur, p.refund)
		if p.refundReversed {
			if p.reversedHook {
				g.hook("REFUNDED_REVERSED", re, pay, p.cur, p.refund)
			}
			g.line("RefundedReversed", pay, re, p.cur, p.refund, "1", p.cur, p.refund, 0)
			g.m.post("provider:adyen:balance", "revenue:refunds", p.cur, p.refund)
		}
	}
	if p.dispute != "" {
		du := g.psp()
		g.hook("CHARGEBACK", du, pay, p.cur, p.amount)
		g.line("Chargeback", pay, du, p.cur, -p.amount, "1", p.cur, -p.amount-p.disputeFee, p.disputeFee)
		g.m.post("receivable:disputes:adyen", "provider:adyen:balance", p.cur, p.amount)
		g.m.post("expenses:fees:adyen", "provider:adyen:balance", p.cur, p.disputeFee)
		switch p.dispute {
		case "won":
			if !p.quietWin {
				g.hook("CHARGEBACK_REVERSED", du, pay, p.cur, p.amount)
			}
			g.line("ChargebackReversed", pay, du, p.cur, p.amount, "1", p.cur, p.amount, 0)
			g.m.post("provider:adyen:balance", "receivable:disputes:adyen", p.cur, p.amount)
		case "lost":
			g.hook("SECOND_CHARGEBACK", du, pay, p.cur, p.amount)
			g.m.post("expenses:disputes", "receivable:disputes:adyen", p.cur, p.amount)
		}
	}
}

// fee is a Fee line of no payment: known only from the report.
func (g *adyenGen) fee(cur string, amount int64) {
	g.line("Fee", "", "Transaction Fees "+g.at.Format("January 2 2006"), "", 0, "", cur, -amount, 0)
	g.m.post("expenses:fees:adyen", "provider:adyen:balance", cur, amount)
}

// correction is a line without a payment reference of journal type typ,
// net signed (Net Credit positive), counted in the batch, booked as the
// journal types say (docs.adyen.com/developers/reporting/
// settlement-detail-report/settlement-detail-report-structure/journal-types):
//   - DepositCorrection "funds being withheld from/release to the account due
//     to a change in the required security deposit", ReserveAdjustment (a
//     change of the reserve balance, help.adyen.com): the deposit is the
//     merchant's money held apart, provider:adyen:reserve;
//   - InvoiceDeduction "a monthly invoice that is credited/deducted from the
//     account": a cost, expenses:fees:adyen;
//   - MatchedStatement "wire transfer from merchant booked in the account":
//     from the bank, bank:payouts;
//   - Balancetransfer "balance transfer to or from subsequent payout
//     batches": the balance only changes batch, nothing is booked.
func (g *adyenGen) correction(typ, cur string, net int64) {
	g.line(typ, "", "", "", 0, "", cur, net, 0)
	switch typ {
	case "DepositCorrection", "ReserveAdjustment":
		g.m.post("provider:adyen:balance", "provider:adyen:reserve", cur, net)
	case "InvoiceDeduction":
		g.m.post("expenses:fees:adyen", "provider:adyen:balance", cur, -net)
	case "MatchedStatement":
		g.m.post("provider:adyen:balance", "bank:payouts", cur, net)
	case "Balancetransfer":
	default:
		panic("no model for " + typ)
	}
}

// paymentCost is a PaymentCost line of a payment ("costs against a
// payment": Klarna late return fees, ELO adjustments; docs.adyen.com
// merchant payout details sheet): a fee, Net Debit.
func (g *adyenGen) paymentCost(psp, cur string, amount int64) {
	g.line("PaymentCost", psp, "late return fee", "", 0, "", cur, -amount, 0)
	g.m.post("expenses:fees:adyen", "provider:adyen:balance", cur, amount)
}

// closeBatch writes each currency's MerchantPayout line: Adyen pays the
// batch's net. A batch that nets negative is either carried to the next
// batch ("balance transfer to or from subsequent payout batches in order to
// process negative payable/capture balances": a Balancetransfer line here
// brings this batch to zero, with no payout, and the next batch takes the
// negative over), or paid as a negative payout, a MerchantPayout of Net
// Credit: Adyen debits the merchant's bank, a paid payout moving money the
// other way (CONTRACT). It returns what it carried, by currency.
func (g *adyenGen) closeBatch(carry bool, short func() int64) map[string]int64 {
	carried := map[string]int64{}
	for _, cur := range sortedKeys(g.curs) {
		po := g.payoutID(cur)
		net := g.m.payout(po).linesNet
		if net < 0 && carry {
			g.line("Balancetransfer", "", "", "", 0, "", cur, -net, 0)
			g.rows[len(g.rows)-1]["Modification Merchant Reference"] = "Balancetransfer to next batch"
			carried[cur] = net
			continue
		}
		amount := net - short()
		g.line("MerchantPayout", "", fmt.Sprintf("TX%sXT batch %s, %s", g.psp(), g.batch, adyenMerchant), "", 0, "", cur, -amount, 0)
		g.m.paid("adyen", po, cur, amount)
	}
	return carried
}

// payouts closes the batch without carrying anything forward.
func (g *adyenGen) payouts(short func() int64) { g.closeBatch(false, short) }

// nextBatch opens the following batch, which takes over what the last one
// carried (a Balancetransfer of the carried, negative, net).
func (g *adyenGen) nextBatch(carried map[string]int64) {
	from := g.batch
	g.batch = fmt.Sprint(atoiOr(g.batch) + 1)
	g.curs = map[string]bool{}
	for _, cur := range sortedKeys(carried) {
		g.line("Balancetransfer", "", "", "", 0, "", cur, carried[cur], 0)
		g.rows[len(g.rows)-1]["Modification Merchant Reference"] = "Balancetransfer from batch " + from
	}
}

func atoiOr(s string) int {
	v, _ := strconv.Atoi(s)
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reports writes one Settlement details report per batch
// (settlement_detail_report_batch_N: one file per merchant account and
// batch), its lines in a random order.
func (g *adyenGen) reports() []propDelivery {
	byBatch := map[string][]adyenRow{}
	for _, r := range g.rows {
		byBatch[r["Batch Number"]] = append(byBatch[r["Batch Number"]], r)
	}
	var out []propDelivery
	for _, b := range sortedKeys(byBatch) {
		rows := byBatch[b]
		g.r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		out = append(out, propDelivery{name: "settlement detail report batch " + b, body: writeAdyenReport(rows)})
	}
	return out
}

// randomPayment is a payment of one of curs with a refund, a dispute or a
// presentment in another currency, now and then without its webhooks.
func (g *adyenGen) randomPayment(curs []string) {
	r := g.r
	p := adyenPayment{cur: curs[r.IntN(len(curs))], amount: 100 + r.Int64N(20000)}
	p.fee = 10 + p.amount*3/100
	switch r.IntN(5) {
	case 0:
		p.refund = 1 + r.Int64N(p.amount)
		p.refundReversed, p.reversedHook = r.IntN(3) == 0, r.IntN(2) == 0
	case 1:
		p.dispute, p.disputeFee = []string{"open", "won", "lost"}[r.IntN(3)], 750
		p.quietWin = r.IntN(2) == 0
	case 2:
		if p.cur == "EUR" { // presented in NZD, settled in EUR
			p.settledCur, p.cur, p.rate = "EUR", "NZD", "0.5938"
			p.settled = p.amount * 5938 / 10000
			p.fee = 10 + p.settled*3/100
		}
	}
	p.noWebhook = r.IntN(8) == 0
	g.payment(p)
}

// randomCorrections adds fee, cost and correction lines to the batch, and
// now and then a fee that makes a currency's batch net negative.
func (g *adyenGen) randomCorrections(curs []string) {
	r := g.r
	if r.IntN(2) == 0 {
		g.fee(curs[0], 1+r.Int64N(100))
	}
	for range r.IntN(4) {
		net := 1 + r.Int64N(500)
		if r.IntN(2) == 0 {
			net = -net
		}
		typ := []string{"Balancetransfer", "DepositCorrection", "ReserveAdjustment", "InvoiceDeduction", "MatchedStatement"}[r.IntN(5)]
		g.correction(typ, curs[r.IntN(len(curs))], net)
	}
	if len(g.pays) > 0 && r.IntN(3) == 0 {
		p := g.pays[r.IntN(len(g.pays))]
		g.paymentCost(p.psp, p.cur, 1+r.Int64N(200))
	}
	if r.IntN(3) == 0 { // a costly batch: the fees exceed the sales
		cur := curs[r.IntN(len(curs))]
		g.fee(cur, max(0, g.m.payout(g.payoutID(cur)).linesNet)+1+r.Int64N(500))
	}
}

func genAdyen(r *rand.Rand, run string, scale int) *propCase {
	g := newAdyenGen(r, run)
	curs := [][]string{{"EUR"}, {"EUR", "GBP"}, {"EUR", "JPY"}}[r.IntN(3)]
	short := func() int64 {
		if r.IntN(4) == 0 {
			return 1 + r.Int64N(50)
		}
		return 0
	}
	batches := 1 + r.IntN(2)
	for b := range batches {
		for range max(1, scale/batches) {
			g.randomPayment(curs)
		}
		g.randomCorrections(curs)
		last := b == batches-1
		carried := g.closeBatch(!last && r.IntN(2) == 0, short)
		if !last {
			g.nextBatch(carried)
		}
	}
	month := ""
	if r.IntN(2) == 0 {
		month = "2026-11"
	}
	return split(r, "adyen", append(g.hooks, g.reports()...), g.m, month)
}

func adyenSeeds() map[string]func(*rand.Rand, string) *propCase {
	return map[string]func(*rand.Rand, string) *propCase{
		// Item 6: two Balancetransfer lines without references, the same
		// amount, in a batch that adds up: reconciled, no conflict.
		"unreferenced-balance-transfers": func(r *rand.Rand, run string) *propCase {
			g := newAdyenGen(r, run)
			g.payment(adyenPayment{cur: "EUR", amount: 1000, fee: 26})
			g.correction("Balancetransfer", "EUR", -100)
			g.correction("Balancetransfer", "EUR", -100)
			g.fee("EUR", 12)
			g.payouts(func() int64 { return 0 })
			return &propCase{provider: "adyen", model: g.m, first: g.hooks, late: g.reports(), closeMonth: "2026-11"}
		},
		// A batch whose costs exceed its sales (a lost chargeback, a
		// large fee), with a presentment in NZD settled in EUR: a negative
		// payout, Net Credit on the MerchantPayout line (Adyen debits the
		// bank): paid, −amount, reconciled.
		"costly-batch-and-fx": func(r *rand.Rand, run string) *propCase {
			g := newAdyenGen(r, run)
			g.payment(adyenPayment{cur: "NZD", amount: 6500, fee: 50, settledCur: "EUR", settled: 3860, rate: ".593846153846154"})
			g.payment(adyenPayment{cur: "EUR", amount: 1000, fee: 26, dispute: "lost", disputeFee: 750})
			g.fee("EUR", 5000)
			g.payouts(func() int64 { return 0 })
			return split(r, "adyen", append(g.hooks, g.reports()...), g.m, "")
		},
		// Issue 24: a negative MerchantPayout, reported after the period
		// closed.
		"negative-merchant-payout": func(r *rand.Rand, run string) *propCase {
			g := newAdyenGen(r, run)
			g.payment(adyenPayment{cur: "EUR", amount: 1200, fee: 26, refund: 1200})
			g.fee("EUR", 355)
			g.payouts(func() int64 { return 0 })
			return &propCase{provider: "adyen", model: g.m, first: g.hooks, late: g.reports(), closeMonth: "2026-11"}
		},
		// A batch netting negative carried forward: a Balancetransfer
		// brings it to zero (no payout, its lines add up), the next batch
		// takes the negative over and its payout adds up.
		"carried-forward-negative": func(r *rand.Rand, run string) *propCase {
			g := newAdyenGen(r, run)
			g.payment(adyenPayment{cur: "EUR", amount: 1000, fee: 26, dispute: "lost", disputeFee: 750})
			g.fee("EUR", 400)
			g.nextBatch(g.closeBatch(true, func() int64 { return 0 }))
			g.payment(adyenPayment{cur: "EUR", amount: 9000, fee: 280})
			g.payouts(func() int64 { return 0 })
			return split(r, "adyen", append(g.hooks, g.reports()...), g.m, "2026-11")
		},
		// Every correction type, each way, twice alike (no references:
		// version-2 keys), and a payment cost.
		"corrections": func(r *rand.Rand, run string) *propCase {
			g := newAdyenGen(r, run)
			g.payment(adyenPayment{cur: "EUR", amount: 5000, fee: 160})
			for _, typ := range []string{"DepositCorrection", "ReserveAdjustment", "InvoiceDeduction", "MatchedStatement", "Balancetransfer"} {
				g.correction(typ, "EUR", -79)
				g.correction(typ, "EUR", -79)
				g.correction(typ, "EUR", 25)
			}
			g.paymentCost(g.pays[0].psp, "EUR", 40)
			g.payouts(func() int64 { return 0 })
			return split(r, "adyen", append(g.hooks, g.reports()...), g.m, "")
		},
	}
}

func TestAdyenGeneratedReportsMatchTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the property test needs Postgres")
	}
	runProperty(t, "adyen", adyenSeeds(), genAdyen)
}

func TestAdyenGeneratorRoundTripsTheSamples(t *testing.T) {
	for _, p := range []string{
		filepath.Join("..", "..", "docs", "samples", "settlement_detail_report_batch_41.csv"),
		filepath.Join("..", "..", "adapters", "providers", "adyen", "testdata", "settlement", "settlement_detail_report_batch_41.csv"),
		filepath.Join("..", "..", "adapters", "providers", "adyen", "testdata", "settlement", "unreferenced_batch_41.csv"),
		filepath.Join("..", "..", "adapters", "providers", "adyen", "testdata", "settlement", "corrections_batch_42.csv"),
	} {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		rows, err := readAdyenReport(raw)
		require.NoError(t, err, p)
		require.NotEmpty(t, rows, p)
		for i, r := range rows {
			gross, net, costs, err := adyenAmounts(r)
			require.NoError(t, err, "%s line %d", p, i+2)
			// With cost columns, net = gross − costs; without them the
			// fee is gross − net (docs.adyen.com: cost columns are optional).
			if r["Gross Currency"] != "" && r["Gross Currency"] == r["Net Currency"] && costs != 0 {
				require.Equal(t, gross-costs, net, "%s line %d: net = gross − costs", p, i+2)
			}
		}
		again, err := readAdyenReport(writeAdyenReport(rows))
		require.NoError(t, err)
		require.Equal(t, rows, again, p)
	}
}
