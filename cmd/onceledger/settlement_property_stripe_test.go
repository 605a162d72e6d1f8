package main_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Stripe: the itemized payout reconciliation report
// (payout_reconciliation.itemized.5, docs.stripe.com/reports/payout-
// reconciliation): one row per balance transaction paid out, amounts in
// major units of the settlement currency, signed as they move the balance
// (a refund's gross is negative), fee positive when charged; the presentment
// amount in customer_facing_amount/currency. Stripe's webhooks carry no fee
// [docs.stripe.com/api/charges/object]; amounts there are in Stripe's units
// (docs.stripe.com/currencies: MGA counted in whole ariary, ISO has two
// decimals).

// stripeRow is one report row, as the generator writes and reads it.
type stripeRow struct {
	payout, txn, created, currency string
	gross, fee, net                int64 // ISO minor units of currency
	category, source               string
	cfAmount                       int64 // presentment, minor units of cfCurrency
	cfCurrency, charge, pi         string
}

var stripeColumns = []string{"automatic_payout_id", "balance_transaction_id", "created_utc", "available_on_utc", "currency",
	"gross", "fee", "net", "reporting_category", "source_id", "customer_facing_amount", "customer_facing_currency",
	"charge_id", "payment_intent_id"}

// isoExp is the generator's own table of ISO 4217 minor-unit digits for the
// currencies it writes.
func isoExp(cur string) int {
	switch strings.ToUpper(cur) {
	case "JPY", "KRW", "ISK":
		return 0
	}
	return 2
}

func writeStripeReport(rows []stripeRow) []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(stripeColumns)
	for _, r := range rows {
		e := isoExp(r.currency)
		cf := ""
		if r.cfCurrency != "" {
			cf = minorText(r.cfAmount, isoExp(r.cfCurrency))
		}
		_ = w.Write([]string{r.payout, r.txn, r.created, r.created, r.currency, minorText(r.gross, e), minorText(r.fee, e),
			minorText(r.net, e), r.category, r.source, cf, r.cfCurrency, r.charge, r.pi})
	}
	w.Flush()
	return b.Bytes()
}

// readStripeReport is the generator's reader: columns by header name, the
// ones it writes.
func readStripeReport(data []byte) ([]stripeRow, error) {
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(recs) == 0 {
		return nil, fmt.Errorf("not a CSV report: %v", err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return rec[i]
		}
		return ""
	}
	var rows []stripeRow
	for _, rec := range recs[1:] {
		r := stripeRow{payout: get(rec, "automatic_payout_id"), txn: get(rec, "balance_transaction_id"),
			created: get(rec, "created_utc"), currency: get(rec, "currency"), category: get(rec, "reporting_category"),
			source: get(rec, "source_id"), cfCurrency: get(rec, "customer_facing_currency"), charge: get(rec, "charge_id"),
			pi: get(rec, "payment_intent_id")}
		e := isoExp(r.currency)
		for _, a := range []struct {
			name string
			dst  *int64
		}{{"gross", &r.gross}, {"fee", &r.fee}, {"net", &r.net}} {
			if *a.dst, err = parseMinorText(get(rec, a.name), e); err != nil {
				return nil, err
			}
		}
		if r.cfCurrency != "" {
			if r.cfAmount, err = parseMinorText(get(rec, "customer_facing_amount"), isoExp(r.cfCurrency)); err != nil {
				return nil, err
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// stripeGen builds a Stripe case: report rows, webhooks and the model.
type stripeGen struct {
	r      *rand.Rand
	run    string
	n      int
	at     time.Time
	rows   []stripeRow
	hooks  []propDelivery
	m      *propModel
	payout map[string]string // currency → payout id
}

func newStripeGen(r *rand.Rand, run string) *stripeGen {
	return &stripeGen{r: r, run: run, at: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), m: newPropModel(), payout: map[string]string{}}
}

func (g *stripeGen) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s_%s_%d", prefix, g.run, g.n)
}

// stripeUnits is amount (ISO minor units) in Stripe's API units.
func stripeUnits(amount int64, cur string) int64 {
	if strings.EqualFold(cur, "mga") {
		return amount / 100
	}
	return amount
}

func (g *stripeGen) hook(typ string, object string) {
	g.at = g.at.Add(time.Duration(1+g.r.IntN(90)) * time.Minute)
	body := fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":%s}}`, g.id("evt"), typ, g.at.Unix(), object)
	g.hooks = append(g.hooks, propDelivery{name: typ, path: "/webhooks/stripe", body: body,
		sign: func(b []byte) http.Header { return stripeDelivery(b, time.Now()) }})
}

// row adds a report row paid out in its currency's payout and counts it.
func (g *stripeGen) row(r stripeRow) {
	if r.payout == "" {
		if g.payout[r.currency] == "" {
			g.payout[r.currency] = g.id("po")
		}
		r.payout = g.payout[r.currency]
	}
	r.txn = g.id("txn")
	r.created = g.at.Format(time.DateTime)
	r.net = r.gross - r.fee
	g.rows = append(g.rows, r)
	g.m.line(r.payout, r.net)
}

// stripeStory is one payment's story.
type stripeStory struct {
	cur          string // settlement and presentment currency, lower case
	amount, fee  int64
	fx           string // presentment currency when it differs (then amount is presented, settled is in cur)
	settled      int64
	refund       int64
	refundFails  bool
	failHook     bool   // the refund's failure is told by refund.failed too, not only by the report
	chargeFails  bool   // the charge failed after it was captured (charge_failure): told by the report only
	dispute      string // "", "open", "won", "lost"
	disputeFee   int64
	noWebhook    bool // the charge's webhook never arrives
	authorized   int64
	partialCapts bool
}

// charge tells c by webhooks and report rows, and books it in the model.
func (g *stripeGen) charge(c stripeStory) {
	pi, ch := g.id("pi"), g.id("ch")
	up := strings.ToUpper(c.cur)
	present, presentAmt := c.cur, c.amount
	if c.fx != "" {
		present = c.fx
	}
	if !c.noWebhook {
		captured := presentAmt
		authorized := captured
		if c.partialCapts {
			authorized = c.authorized
		}
		g.hook("charge.succeeded", fmt.Sprintf(`{"id":%q,"object":"charge","payment_intent":%q,"amount":%d,"amount_captured":%d,"captured":true,"currency":%q}`,
			ch, pi, stripeUnits(authorized, present), stripeUnits(captured, present), present))
	}
	g.m.post("provider:stripe:balance", "revenue:sales", strings.ToUpper(present), presentAmt)
	settled := c.amount
	row := stripeRow{currency: c.cur, category: "charge", source: ch, charge: ch, pi: pi, fee: c.fee}
	if c.fx != "" {
		settled = c.settled
		row.cfAmount, row.cfCurrency = c.amount, c.fx
		// docs/reference.md: a conversion through fx:trading.
		g.m.post("provider:stripe:balance", "fx:trading", up, settled)
		g.m.post("fx:trading", "provider:stripe:balance", strings.ToUpper(c.fx), c.amount)
	}
	row.gross = settled
	if c.partialCapts {
		row.gross = c.authorized // Stripe: the charge row is the authorization
	}
	g.row(row)
	if c.partialCapts {
		g.row(stripeRow{currency: c.cur, category: "partial_capture_reversal", source: ch, charge: ch, pi: pi, gross: -(c.authorized - c.amount)})
	}
	g.m.post("expenses:fees:stripe", "provider:stripe:balance", up, c.fee)
	if c.chargeFails {
		// Stripe charge_failure: the captured charge failed (an ACH debit
		// returned) and its amount left the balance; no webhook posts it.
		g.row(stripeRow{currency: c.cur, category: "charge_failure", source: ch, charge: ch, pi: pi, gross: -settled})
		g.m.post("revenue:sales", "provider:stripe:balance", up, settled)
	}
	if c.refund > 0 {
		g.refund(c, pi, ch)
	}
	if c.dispute != "" {
		g.dispute(c, pi, ch)
	}
}

func (g *stripeGen) refund(c stripeStory, pi, ch string) {
	up := strings.ToUpper(c.cur)
	re := g.id("re")
	obj := func(status string) string {
		return fmt.Sprintf(`{"id":%q,"object":"refund","amount":%d,"charge":%q,"payment_intent":%q,"currency":%q,"status":%q}`,
			re, stripeUnits(c.refund, c.cur), ch, pi, c.cur, status)
	}
	g.hook("refund.created", obj("succeeded"))
	g.row(stripeRow{currency: c.cur, category: "refund", source: re, charge: ch, pi: pi, gross: -c.refund})
	g.m.post("revenue:refunds", "provider:stripe:balance", up, c.refund)
	if c.refundFails {
		// The bank refused the refund: Stripe returns the funds to the
		// balance (reporting category refund_failure).
		if c.failHook {
			g.hook("refund.failed", obj("failed"))
		}
		g.row(stripeRow{currency: c.cur, category: "refund_failure", source: re, charge: ch, pi: pi, gross: c.refund})
		g.m.post("provider:stripe:balance", "revenue:refunds", up, c.refund)
	}
}

func (g *stripeGen) dispute(c stripeStory, pi, ch string) {
	up := strings.ToUpper(c.cur)
	du := g.id("du")
	obj := func(status string) string {
		return fmt.Sprintf(`{"id":%q,"object":"dispute","amount":%d,"charge":%q,"payment_intent":%q,"currency":%q,"status":%q,"reason":"fraudulent","balance_transactions":[]}`,
			du, stripeUnits(c.amount, c.cur), ch, pi, c.cur, status)
	}
	g.hook("charge.dispute.created", obj("needs_response"))
	g.row(stripeRow{currency: c.cur, category: "dispute", source: du, charge: ch, pi: pi, gross: -c.amount, fee: c.disputeFee})
	g.m.post("receivable:disputes:stripe", "provider:stripe:balance", up, c.amount)
	g.m.post("expenses:fees:stripe", "provider:stripe:balance", up, c.disputeFee)
	switch c.dispute {
	case "won":
		g.hook("charge.dispute.closed", obj("won"))
		g.row(stripeRow{currency: c.cur, category: "dispute_reversal", source: du, charge: ch, pi: pi, gross: c.amount})
		g.m.post("provider:stripe:balance", "receivable:disputes:stripe", up, c.amount)
	case "lost":
		g.hook("charge.dispute.closed", obj("lost"))
		g.m.post("expenses:disputes", "receivable:disputes:stripe", up, c.amount)
	}
}

// feeOnly is a fee row of no payment (Radar, Billing): a fee known only
// from the report.
func (g *stripeGen) feeOnly(cur string, amount int64) {
	g.row(stripeRow{currency: cur, category: "fee", source: g.id("fee"), gross: -amount})
	g.m.post("expenses:fees:stripe", "provider:stripe:balance", strings.ToUpper(cur), amount)
}

// reserve is a risk_reserved_funds row (funds held, negative; released,
// positive): between the balance and provider:stripe:reserve.
func (g *stripeGen) reserve(cur string, net int64) {
	g.row(stripeRow{currency: cur, category: "risk_reserved_funds", source: g.id("rsv"), gross: net})
	g.m.post("provider:stripe:balance", "provider:stripe:reserve", strings.ToUpper(cur), net)
}

// foreignFee is a fee row in cur listed in the payout of another currency:
// it posts as any fee but never proves that payout.
func (g *stripeGen) foreignFee(cur, payoutCur string, amount int64) {
	if g.payout[payoutCur] == "" {
		g.payout[payoutCur] = g.id("po")
	}
	po := g.payout[payoutCur]
	g.rows = append(g.rows, stripeRow{payout: po, txn: g.id("txn"), created: g.at.Format(time.DateTime), currency: cur,
		category: "fee", source: g.id("fee"), gross: -amount, net: -amount})
	g.m.foreignLine(po)
	g.m.post("expenses:fees:stripe", "provider:stripe:balance", strings.ToUpper(cur), amount)
}

// payouts closes each currency's payout: paid for the lines' net, or short
// of it by short (then a mismatch).
func (g *stripeGen) payouts(short func() int64) {
	for cur, po := range g.payout {
		p := g.m.payout(po)
		if p.linesNet <= 0 { // Stripe pays out a positive balance
			g.charge(stripeStory{cur: cur, amount: 1000 - p.linesNet, fee: 30})
		}
		amount := p.linesNet - short()
		g.at = g.at.Add(24 * time.Hour)
		g.hook("payout.paid", fmt.Sprintf(`{"id":%q,"object":"payout","amount":%d,"arrival_date":%d,"automatic":true,"currency":%q,"status":"paid"}`,
			po, stripeUnits(amount, cur), g.at.Unix(), cur))
		g.m.paid("stripe", po, strings.ToUpper(cur), amount)
	}
}

// reports splits the rows over one or two report files (the second
// overlapping the first), in a random order of rows.
func (g *stripeGen) reports() []propDelivery {
	rows := append([]stripeRow(nil), g.rows...)
	g.r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	if len(rows) < 4 || g.r.IntN(2) == 0 {
		return []propDelivery{{name: "report", body: writeStripeReport(rows)}}
	}
	cut := 1 + g.r.IntN(len(rows)-2)
	return []propDelivery{{name: "report 1", body: writeStripeReport(rows[:cut+1])}, {name: "report 2", body: writeStripeReport(rows[cut:])}}
}

func (g *stripeGen) finish(closeMonth string) *propCase {
	return split(g.r, "stripe", append(g.hooks, g.reports()...), g.m, closeMonth)
}

func genStripe(r *rand.Rand, run string, scale int) *propCase {
	g := newStripeGen(r, run)
	curs := [][]string{{"usd"}, {"usd", "jpy"}, {"usd", "eur"}}[r.IntN(3)]
	for range scale {
		cur := curs[r.IntN(len(curs))]
		c := stripeStory{cur: cur, amount: 500 + r.Int64N(20000)}
		c.fee = 30 + c.amount*29/1000
		if cur == "jpy" {
			c.fee = c.amount * 36 / 1000
		}
		switch r.IntN(6) {
		case 0:
			c.refund = 1 + r.Int64N(c.amount)
			c.refundFails = r.IntN(3) == 0
			c.failHook = r.IntN(2) == 0 // else the report alone tells it
		case 1:
			c.dispute = []string{"open", "won", "lost"}[r.IntN(3)]
			c.disputeFee = 1500
			if cur == "jpy" {
				c.disputeFee = 2000
			}
		case 2:
			if cur == "usd" {
				c.fx, c.settled = "eur", c.amount*108/100
			}
		case 3:
			// Item 5: the authorization above the captured amount.
			c.partialCapts, c.authorized = true, c.amount+1+r.Int64N(5000)
		case 4:
			c.chargeFails = r.IntN(2) == 0 // issue 34: told by the report only
		}
		c.noWebhook = r.IntN(8) == 0
		g.charge(c)
	}
	if r.IntN(2) == 0 {
		g.feeOnly(curs[0], 1+r.Int64N(200))
	}
	for range r.IntN(3) { // issue 34: reserves held and released
		net := 1 + r.Int64N(500)
		if r.IntN(3) != 0 {
			net = -net
		}
		g.reserve(curs[r.IntN(len(curs))], net)
	}
	g.payouts(func() int64 {
		if r.IntN(4) == 0 {
			return 1 + r.Int64N(50)
		}
		return 0
	})
	month := ""
	if r.IntN(2) == 0 {
		month = "2026-11"
	}
	return g.finish(month)
}

// stripeSeeds are the fixed cases of issue 24 that concern Stripe.
func stripeSeeds() map[string]func(*rand.Rand, string) *propCase {
	seeds := map[string]func(*rand.Rand, string) *propCase{
		// Item 4: MGA amounts are whole ariary in Stripe's API, two
		// decimals in ISO and in the report.
		"mga": func(r *rand.Rand, run string) *propCase {
			g := newStripeGen(r, run)
			g.charge(stripeStory{cur: "mga", amount: 5000000, fee: 150000, refund: 100000})
			g.payouts(func() int64 { return 0 })
			return g.finish("")
		},
		// A refund that failed, a dispute won and one lost, a fee-only
		// row, a presentment in EUR settled in USD, the report after the
		// period closed.
		"refund-failure-disputes-fx-late": func(r *rand.Rand, run string) *propCase {
			g := newStripeGen(r, run)
			g.charge(stripeStory{cur: "usd", amount: 10000, fee: 320, refund: 2500, refundFails: true, failHook: true})
			g.charge(stripeStory{cur: "usd", amount: 4000, fee: 146, dispute: "won", disputeFee: 1500})
			g.charge(stripeStory{cur: "usd", amount: 3000, fee: 117, dispute: "lost", disputeFee: 1500})
			g.charge(stripeStory{cur: "usd", amount: 1000, fee: 61, fx: "eur", settled: 1085})
			g.feeOnly("usd", 5)
			g.payouts(func() int64 { return 0 })
			c := &propCase{provider: "stripe", model: g.m, closeMonth: "2026-11", first: g.hooks, late: g.reports()}
			return c
		},
	}
	// Item 5: a charge row for the authorization and a
	// partial_capture_reversal row for the part not captured.
	seeds["partial-capture"] = stripePartialCapture
	// Issue 34: reversals told by the report only (refund_failure without
	// refund.failed, charge_failure), reserves held and released.
	seeds["report-only-reversals-reserves"] = func(r *rand.Rand, run string) *propCase {
		g := newStripeGen(r, run)
		g.charge(stripeStory{cur: "usd", amount: 10000, fee: 320, refund: 10000, refundFails: true})
		g.charge(stripeStory{cur: "usd", amount: 5000, fee: 175, chargeFails: true})
		g.charge(stripeStory{cur: "usd", amount: 20000, fee: 610})
		g.reserve("usd", -3000)
		g.reserve("usd", 1200)
		g.payouts(func() int64 { return 0 })
		return g.finish("2026-11")
	}
	// Issue 34 case 7: a EUR fee listed in the USD payout, which is paid
	// for all its lines: the USD lines alone do not make it, a mismatch.
	seeds["line-in-another-currency"] = func(r *rand.Rand, run string) *propCase {
		g := newStripeGen(r, run)
		g.charge(stripeStory{cur: "usd", amount: 10000, fee: 320})
		g.charge(stripeStory{cur: "eur", amount: 8000, fee: 262})
		g.foreignFee("eur", "usd", 100)
		g.payouts(func() int64 { return 100 }) // the USD lines less the EUR fee, as if it counted
		return g.finish("")
	}
	return seeds
}

func stripePartialCapture(r *rand.Rand, run string) *propCase {
	g := newStripeGen(r, run)
	g.charge(stripeStory{cur: "usd", amount: 6000, authorized: 10000, partialCapts: true, fee: 320})
	g.payouts(func() int64 { return 0 })
	return g.finish("")
}

func TestStripeGeneratedReportsMatchTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the property test needs Postgres")
	}
	runProperty(t, "stripe", stripeSeeds(), genStripe)
}

// The generator's reader reads the published samples, and what the
// generator writes from them reads back the same.
func TestStripeGeneratorRoundTripsTheSamples(t *testing.T) {
	for _, p := range []string{
		filepath.Join("..", "..", "docs", "samples", "stripe_payout_reconciliation.itemized.csv"),
		filepath.Join("..", "..", "adapters", "providers", "stripe", "testdata", "settlement", "payout_reconciliation.itemized.5.csv"),
	} {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		rows, err := readStripeReport(raw)
		require.NoError(t, err, p)
		require.NotEmpty(t, rows, p)
		for _, r := range rows {
			require.Equal(t, r.gross-r.fee, r.net, "%s %s: net is gross less fee", p, r.txn)
		}
		again, err := readStripeReport(writeStripeReport(rows))
		require.NoError(t, err)
		require.Equal(t, rows, again, p)
	}
}
