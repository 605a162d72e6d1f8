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

	"github.com/onceledger/onceledger/adapters/providers/paypal"
	"github.com/onceledger/onceledger/adapters/providers/report"
)

// PayPal: the Settlement report (STL, developer.paypal.com/docs/reports/
// sftp-reports/settlement-report): RH, FH, then a section (SH, CH, SB rows,
// SF per currency, SC), RF, RC, FF. "Money amount fields are unsigned …
// 100,00 yen and $100.00 USD are both represented as 10000": minor units,
// the CR/DR column giving the direction, the fee with its own CR/DR. A
// daily report, not a payout batch: the bank payout is the T0400 row
// (PayPal sends no webhook for it). Chargebacks: the T1201 row (and the
// T1202 reversal of one won) names the disputed capture, and the REST
// CUSTOMER.DISPUTE.* webhooks name it too: either posts the chargeback,
// once (docs/settlement.md, "Partial captures and PayPal chargebacks";
// issue 34: a chargeback told by the STL alone moves the money). A capture in EUR is converted
// at once: a T0200 pair naming it, DR the EUR it had, CR the USD it bought,
// each leg through fx:trading.

type stlRow struct {
	id, ref, refType, code, at, dir string
	gross                           int64
	cur, feeDir                     string
	fee                             int64
}

var stlCH = []string{"Transaction ID", "Invoice ID", "PayPal Reference ID", "PayPal Reference ID Type", "Transaction Event Code",
	"Transaction Initiation Date", "Transaction Completion Date", "Transaction  Debit or Credit", "Gross Transaction Amount",
	"Gross Transaction Currency", "Fee Debit or Credit", "Fee Amount", "Fee Currency"}

// writeSTL writes the rows as a report in one file.
func writeSTL(rows []stlRow) []byte { return writeSTLFiles(rows, 1)[0] }

// writeSTLFiles writes the rows as a report split over parts files (PayPal
// splits a report over a million records), each RH, FH (its sequence
// number), one section (SH, CH, its SB rows, SF per currency, SC) and FF;
// the last also holds the report's RF and RC, over the rows of every file.
// SF and RF sum the rows per currency: gross credits, gross debits, fee
// credits, fee debits, six zero balances, the currency's row count; SC, RC
// and FF count SB rows (of the section, the report, the file).
func writeSTLFiles(rows []stlRow, parts int) [][]byte {
	var out [][]byte
	for i := range parts {
		part := rows[len(rows)*i/parts : len(rows)*(i+1)/parts]
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		_ = w.Write([]string{"RH", "2026/12/01 02:44:19 -0800", "A", "ACCT", "009"})
		_ = w.Write([]string{"FH", fmt.Sprintf("%02d", i+1)})
		_ = w.Write([]string{"SH", "2026/11/20 00:00:00 -0800", "2026/11/30 23:59:59 -0800", "ACCT", ""})
		_ = w.Write(append([]string{"CH"}, stlCH...))
		for _, r := range part {
			feeAmt := ""
			if r.feeDir != "" {
				feeAmt = strconv.FormatInt(r.fee, 10)
			}
			_ = w.Write([]string{"SB", r.id, "", r.ref, r.refType, r.code, r.at, r.at, r.dir, strconv.FormatInt(r.gross, 10), r.cur, r.feeDir, feeAmt, r.cur})
		}
		stlFooters(w, "SF", part)
		_ = w.Write([]string{"SC", strconv.Itoa(len(part))})
		if i == parts-1 {
			stlFooters(w, "RF", rows)
			_ = w.Write([]string{"RC", strconv.Itoa(len(rows))})
		}
		_ = w.Write([]string{"FF", strconv.Itoa(len(part))})
		w.Flush()
		out = append(out, b.Bytes())
	}
	return out
}

// stlFooters writes one typ (SF or RF) row per currency of rows.
func stlFooters(w *csv.Writer, typ string, rows []stlRow) {
	type tot struct{ gc, gd, fc, fd, n int64 }
	sums := map[string]*tot{}
	for _, r := range rows {
		s := sums[r.cur]
		if s == nil {
			s = &tot{}
			sums[r.cur] = s
		}
		s.n++
		if r.dir == "CR" {
			s.gc += r.gross
		} else {
			s.gd += r.gross
		}
		if r.feeDir == "CR" {
			s.fc += r.fee
		} else if r.feeDir == "DR" {
			s.fd += r.fee
		}
	}
	curs := make([]string, 0, len(sums))
	for c := range sums {
		curs = append(curs, c)
	}
	sort.Strings(curs)
	for _, c := range curs {
		s := sums[c]
		rec := []string{typ, c}
		for _, v := range []int64{s.gc, s.gd, s.fc, s.fd} {
			rec = append(rec, strconv.FormatInt(v, 10))
		}
		for range 6 {
			rec = append(rec, "CR", "0")
		}
		_ = w.Write(append(rec, strconv.FormatInt(s.n, 10)))
	}
}

// readSTL reads the SB rows by the CH names (white space folded).
func readSTL(data []byte) ([]stlRow, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	var rows []stlRow
	for _, rec := range recs {
		switch rec[0] {
		case "CH":
			for i, h := range rec {
				col[strings.Join(strings.Fields(h), " ")] = i
			}
		case "SB":
			get := func(name string) string {
				if i, ok := col[strings.Join(strings.Fields(name), " ")]; ok && i < len(rec) {
					return rec[i]
				}
				return ""
			}
			row := stlRow{id: get("Transaction ID"), ref: get("PayPal Reference ID"), refType: get("PayPal Reference ID Type"),
				code: get("Transaction Event Code"), at: get("Transaction Completion Date"), dir: get("Transaction Debit or Credit"),
				cur: get("Gross Transaction Currency"), feeDir: get("Fee Debit or Credit")}
			if row.gross, err = parseMinorText(get("Gross Transaction Amount"), 0); err != nil {
				return nil, err
			}
			if row.fee, err = parseMinorText(get("Fee Amount"), 0); err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

type paypalGen struct {
	r     *rand.Rand
	run   string
	n     int
	at    time.Time
	rows  []stlRow
	hooks []propDelivery
	m     *propModel
}

func (g *paypalGen) id() string {
	g.n++
	return fmt.Sprintf("%s%05d", strings.ToUpper(strings.ReplaceAll(g.run, "_", "")), g.n)
}

func (g *paypalGen) row(r stlRow) {
	g.at = g.at.Add(time.Duration(1+g.r.IntN(90)) * time.Minute)
	r.at = g.at.Format("2006/01/02 15:04:05 -0700")
	g.rows = append(g.rows, r)
}

func (g *paypalGen) hook(body []byte) {
	g.hooks = append(g.hooks, propDelivery{name: "paypal webhook", path: "/webhooks/paypal", body: body,
		sign: func(b []byte) http.Header {
			// The keys exist: the stack that receives this made them.
			h, err := paypal.SignHeaders(e2eKeysVal.paypal, paypalWebhookID, uniq("tx"), time.Now(), b)
			if err != nil {
				panic(err)
			}
			return h
		}})
}

// payment is a USD capture (fee charged), maybe refunded in part (PayPal
// returns the fee pro rata: a CR fee on the T1107 row).
func (g *paypalGen) payment(amount, fee, refund, feeBack int64, noWebhook bool) {
	capture := g.id()
	if !noWebhook {
		g.hook(paypalCapture(nil, capture, amount, fee))
	}
	g.row(stlRow{id: capture, code: "T0006", dir: "CR", gross: amount, cur: "USD", feeDir: "DR", fee: fee})
	g.m.post("provider:paypal:balance", "revenue:sales", "USD", amount)
	g.m.post("expenses:fees:paypal", "provider:paypal:balance", "USD", fee)
	if refund > 0 {
		re := g.id()
		g.hook(paypalE2E.refund(nil, capture, re, refund))
		g.row(stlRow{id: re, ref: capture, refType: "TXN", code: "T1107", dir: "DR", gross: refund, cur: "USD", feeDir: "CR", fee: feeBack})
		g.m.post("revenue:refunds", "provider:paypal:balance", "USD", refund)
		g.m.post("expenses:fees:paypal", "provider:paypal:balance", "USD", -feeBack)
	}
}

// chargeback disputes capture (amount, USD) as a card chargeback: the
// webhook opens it and, unless still open, resolves it; the T1201 row
// debits the amount and PayPal's chargeback fee, a T1202 row credits the
// amount back when the seller wins. It returns what the balance moved.
//
// With stlOnly no webhook tells it (issue 34): the rows alone withdraw the
// amount and, won, reinstate it; a loss is not in the STL, so it stays
// withdrawn ("lost" is then "open").
func (g *paypalGen) chargeback(capture string, amount, cbFee int64, outcome string, stlOnly bool) int64 {
	dispute := uniq("PP-D-")
	hook := g.hook
	if stlOnly {
		hook = func([]byte) {}
		if outcome == "lost" {
			outcome = "open"
		}
	}
	hook(paypalDispute("CUSTOMER.DISPUTE.CREATED", capture, dispute, amount, ""))
	g.row(stlRow{id: g.id(), ref: capture, refType: "TXN", code: "T1201", dir: "DR", gross: amount, cur: "USD", feeDir: "DR", fee: cbFee})
	g.m.post("receivable:disputes:paypal", "provider:paypal:balance", "USD", amount)
	g.m.post("expenses:fees:paypal", "provider:paypal:balance", "USD", cbFee)
	switch outcome {
	case "won":
		hook(paypalDispute("CUSTOMER.DISPUTE.RESOLVED", capture, dispute, amount, "RESOLVED_SELLER_FAVOUR"))
		g.row(stlRow{id: g.id(), ref: capture, refType: "TXN", code: "T1202", dir: "CR", gross: amount, cur: "USD"})
		g.m.post("provider:paypal:balance", "receivable:disputes:paypal", "USD", amount)
		return -cbFee
	case "lost":
		hook(paypalDispute("CUSTOMER.DISPUTE.RESOLVED", capture, dispute, amount, "RESOLVED_BUYER_FAVOUR"))
		g.m.post("expenses:disputes", "receivable:disputes:paypal", "USD", amount)
	}
	return -amount - cbFee
}

// converted is a EUR capture (fee charged in EUR) whose net PayPal converts
// to USD at once: it returns the USD bought.
func (g *paypalGen) converted(amount, fee int64, noWebhook bool) int64 {
	capture := g.id()
	if !noWebhook {
		g.hook(paypalEvent("PAYMENT.CAPTURE.COMPLETED", "capture", map[string]any{
			"id": capture, "status": "COMPLETED", "amount": paypalMoneyIn("EUR", amount), "final_capture": true,
			"seller_receivable_breakdown": map[string]any{"gross_amount": paypalMoneyIn("EUR", amount),
				"paypal_fee": paypalMoneyIn("EUR", fee), "net_amount": paypalMoneyIn("EUR", amount-fee)},
		}))
	}
	g.row(stlRow{id: capture, code: "T0006", dir: "CR", gross: amount, cur: "EUR", feeDir: "DR", fee: fee})
	g.m.post("provider:paypal:balance", "revenue:sales", "EUR", amount)
	g.m.post("expenses:fees:paypal", "provider:paypal:balance", "EUR", fee)
	net := amount - fee
	usd := net * 1086 / 1000
	g.row(stlRow{id: g.id(), ref: capture, refType: "TXN", code: "T0200", dir: "DR", gross: net, cur: "EUR"})
	g.row(stlRow{id: g.id(), ref: capture, refType: "TXN", code: "T0200", dir: "CR", gross: usd, cur: "USD"})
	g.m.post("fx:trading", "provider:paypal:balance", "EUR", net)
	g.m.post("provider:paypal:balance", "fx:trading", "USD", usd)
	return usd
}

func paypalMoneyIn(cur string, minor int64) map[string]any {
	return map[string]any{"currency_code": cur, "value": major(minor)}
}

// withdrawal is the T0400 row: the day's payout to the bank.
func (g *paypalGen) withdrawal(amount int64) {
	po := g.id()
	g.row(stlRow{id: po, code: "T0400", dir: "DR", gross: amount, cur: "USD"})
	g.m.paid("paypal", po, "USD", amount)
}

func genPaypal(r *rand.Rand, run string, scale int) *propCase {
	g := &paypalGen{r: r, run: run, at: time.Date(2026, 11, 20, 9, 0, 0, 0, time.FixedZone("PST", -8*3600)), m: newPropModel()}
	var bal int64
	for range scale {
		amount := 100 + r.Int64N(20000)
		fee := 49 + amount*349/10000
		if r.IntN(5) == 0 {
			bal += g.converted(amount, fee, r.IntN(8) == 0)
			continue
		}
		var refund, back int64
		if r.IntN(3) == 0 {
			refund = 1 + r.Int64N(amount)
			back = fee * refund / amount
		}
		g.payment(amount, fee, refund, back, r.IntN(8) == 0)
		bal += amount - fee - refund + back
		if refund == 0 && r.IntN(4) == 0 {
			bal += g.chargeback(g.rows[len(g.rows)-1].id, amount, 2000, []string{"open", "won", "lost"}[r.IntN(3)], r.IntN(2) == 0)
		}
	}
	if bal > 0 {
		g.withdrawal(bal)
	}
	month := ""
	if r.IntN(2) == 0 {
		month = "2026-11"
	}
	// One file, or (one case in three) the report split over two, each
	// imported on its own.
	parts := 1
	if len(g.rows) >= 2 && r.IntN(3) == 0 {
		parts = 2
	}
	ds := g.hooks
	for i, f := range writeSTLFiles(g.rows, parts) {
		ds = append(ds, propDelivery{name: fmt.Sprintf("STL file %d of %d", i+1, parts), body: f})
	}
	return split(r, "paypal", ds, g.m, month)
}

// paypalSeeds are fixed cases: every kind of row at once, the report split
// over two files (issue 24: a truncated STL, footers and counts).
var paypalSeeds = map[string]func(*rand.Rand, string) *propCase{
	// Issue 34 case 5: chargebacks the STL alone tells (T1201, a T1202
	// for the one won): they move the money, the day nets to zero.
	"stl-only-chargebacks": func(r *rand.Rand, run string) *propCase {
		g := &paypalGen{r: r, run: run, at: time.Date(2026, 11, 20, 9, 0, 0, 0, time.FixedZone("PST", -8*3600)), m: newPropModel()}
		var bal int64
		for i, outcome := range []string{"open", "won"} {
			amount, fee := int64(3000+1000*i), int64(154+35*i)
			g.payment(amount, fee, 0, 0, false)
			bal += amount - fee + g.chargeback(g.rows[len(g.rows)-1].id, amount, 2000, outcome, true)
		}
		g.payment(20000, 747, 0, 0, false)
		bal += 20000 - 747
		g.withdrawal(bal)
		ds := g.hooks
		for i, f := range writeSTLFiles(g.rows, 1) {
			ds = append(ds, propDelivery{name: fmt.Sprintf("STL file %d of 1", i+1), body: f})
		}
		return split(r, "paypal", ds, g.m, "")
	},
	"chargebacks-fx-split-late": func(r *rand.Rand, run string) *propCase {
		g := &paypalGen{r: r, run: run, at: time.Date(2026, 11, 20, 9, 0, 0, 0, time.FixedZone("PST", -8*3600)), m: newPropModel()}
		var bal int64
		for i, outcome := range []string{"open", "won", "lost"} {
			amount, fee := int64(4000+1000*i), int64(189+35*i)
			g.payment(amount, fee, 0, 0, i == 2)
			bal += amount - fee + g.chargeback(g.rows[len(g.rows)-1].id, amount, 2000, outcome, false)
		}
		g.payment(5000, 224, 1500, 67, false)
		bal += 5000 - 224 - 1500 + 67
		bal += g.converted(9000, 349, false)
		g.withdrawal(bal)
		ds := g.hooks
		for i, f := range writeSTLFiles(g.rows, 2) {
			ds = append(ds, propDelivery{name: fmt.Sprintf("STL file %d of 2", i+1), body: f})
		}
		return split(r, "paypal", ds, g.m, "2026-11")
	},
}

func TestPaypalGeneratedReportsMatchTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the property test needs Postgres")
	}
	runProperty(t, "paypal", paypalSeeds, genPaypal)
}

func TestPaypalGeneratorRoundTripsTheSample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "samples", "STL-20261130.01.009.CSV"))
	require.NoError(t, err)
	rows, err := readSTL(raw)
	require.NoError(t, err)
	require.Len(t, rows, 7)
	again, err := readSTL(writeSTL(rows))
	require.NoError(t, err)
	require.Equal(t, rows, again)
	// The sample's footers are what the generator writes for its rows.
	tail := func(b []byte) string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			l = strings.ReplaceAll(l, `"`, "")
			for _, typ := range []string{"SF,", "SC,", "RF,", "RC,", "FF,"} {
				if strings.HasPrefix(l, typ) {
					out = append(out, l)
				}
			}
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	require.Equal(t, tail(raw), tail(writeSTL(rows)), "the sample adds up")
}

// The generator's files are what the importer takes: split or not, each
// file's footers add up on their own, and the files hold every row once.
func TestPaypalGeneratorFilesPassTheirFooters(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "samples", "STL-20261130.01.009.CSV"))
	require.NoError(t, err)
	rows, err := readSTL(raw)
	require.NoError(t, err)
	for parts := 1; parts <= 3; parts++ {
		var again []stlRow
		for i, f := range writeSTLFiles(rows, parts) {
			n := 0
			err := paypal.ParseSettlement(bytes.NewReader(f), report.Options{}, func(report.Record) error { n++; return nil })
			require.NoError(t, err, "file %d of %d", i+1, parts)
			got, err := readSTL(f)
			require.NoError(t, err)
			require.Len(t, got, n)
			again = append(again, got...)
		}
		require.Equal(t, rows, again, "%d files", parts)
	}
}

// Over HTTP: an STL file that disagrees with its own footer is answered
// 400 naming the footer's line and imports nothing; the genuine file then
// imports whole.
func TestPaypalReportDisagreeingWithItsFooterImportsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Postgres")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "samples", "STL-20261130.01.009.CSV"))
	require.NoError(t, err)
	s := propStack(t, onPostgres)
	for _, bad := range []struct{ old, new, line string }{
		{`"CR",1000,"USD","DR",79`, `"CR",1001,"USD","DR",79`, "line 12"}, // an amount changed: SF USD
		{`"FF",7`, `"FF",8`, "line 18"},
		{`"RC",7`, `"RC",6`, "line 17"},
	} {
		ans := s.v1(http.MethodPost, "/v1/settlements/paypal", bytes.Replace(raw, []byte(bad.old), []byte(bad.new), 1))
		require.Equal(t, http.StatusBadRequest, ans.Status, ans.Body)
		require.Contains(t, ans.Body, bad.line, bad.new)
	}
	s.projectedToHead()
	require.Empty(t, s.readBalances(), "nothing imported")
	ans := s.v1(http.MethodPost, "/v1/settlements/paypal", raw)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	s.projectedToHead()
	require.NotEmpty(t, s.readBalances())
}
