package adyen

// Settlement details report (settlement_detail_report_batch_N.csv): one CSV
// per merchant account and payable batch [docs.adyen.com/reporting/
// settlement-detail-report]. Columns are found by header name: Adyen adds
// and reorders columns between accounts and report versions.
//
// Ids, matched to this package's webhook normalizer (adyen.go):
//   - PaymentKey: Psp Reference, the payment's PSP reference — the
//     webhook's originalReference on modifications (its payment key).
//   - Settled: CaptureID = Modification Reference, the capture's PSP
//     reference = the CAPTURE notification's pspReference (its business id).
//     With automatic capture Adyen writes the payment's reference there.
//   - Refunded: RefundID = Modification Reference (REFUND pspReference).
//   - Chargeback, ChargebackReversed: DisputeID = Modification Reference,
//     the dispute's PSP reference that CHARGEBACK, CHARGEBACK_REVERSED …
//     carry as pspReference.
//   - PayoutID: "<Merchant Account>/<Batch Number>/<Net Currency>": one
//     payout per batch and settlement currency (a batch pays one
//     MerchantPayout line per currency). Adyen sends no payout webhook the
//     adapter maps, so payout lines are NoWebhook.
//
// Units and signs [docs.adyen.com/reporting/settlement-reconciliation/
// transaction-level/settlement-details-report]: amounts are unsigned major
// units; the column says the direction (Gross/Net Debit vs Credit). The four
// cost columns (Commission, Markup, Scheme Fees, Interchange; net currency)
// are unsigned: "net credit = gross credit × rate − fees", "net debit = gross
// debit × rate + fees". A line's Net is Net Credit − Net Debit; its Fee is
// Gross − Net when gross and net share a currency (which also counts cost
// columns a report version adds), else the sum of the cost columns; Gross is
// Net + Fee in the settlement (net) currency. Gross (GC) signed is the
// original amount, Exchange Rate kept as text.
//
// Lines have no id of their own: the dedup key is merchant account, batch,
// type, PSP reference, modification reference and net currency (key
// version 1, the key every line had before version 2). Lines without
// references (Balancetransfer, DepositCorrection, fees: empty or free-text
// references) can share that key within one file; the key is unique within
// a file by construction (keyer): the first line of a version-1 key keeps
// it, so a file imported under version 1 and again now changes nothing for
// the lines it recorded, and each further line of that key gets version 2:
// the version-1 key, every column that tells such lines apart, and the
// line's rank among lines identical in all of them.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

var settlementColumns = []string{
	"Merchant Account", "Psp Reference", "Merchant Reference", "Creation Date", "TimeZone", "Type",
	"Modification Reference", "Gross Currency", "Gross Debit (GC)", "Gross Credit (GC)", "Exchange Rate",
	"Net Currency", "Net Debit (NC)", "Net Credit (NC)", "Commission (NC)", "Markup (NC)", "Scheme Fees (NC)",
	"Interchange (NC)", "Batch Number",
}

// distinguishing are the columns that tell apart lines sharing a
// version-1 key (version 2 of the key): references, times and every amount.
var distinguishing = []string{
	"Merchant Reference", "Modification Merchant Reference", "Creation Date", "TimeZone", "Gross Currency",
	"Gross Debit (GC)", "Gross Credit (GC)", "Exchange Rate", "Net Debit (NC)", "Net Credit (NC)",
	"Commission (NC)", "Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)", "Payment Method",
	"Payment Method Variant", "Booking Date",
}

var costColumns = []string{"Commission (NC)", "Markup (NC)", "Scheme Fees (NC)", "Interchange (NC)"}

var _ report.Parser = ParseSettlement

// ParseSettlement streams a Settlement details report. Required columns:
// Psp Reference, Type, Creation Date, Gross Currency or Net Currency, and
// Batch Number unless opt.PayoutID gives the batch (from the file name).
func ParseSettlement(r io.Reader, opt report.Options, fn report.Func) error {
	c := report.NewCSV(r)
	if err := c.ReadHeader(); err != nil {
		return err
	}
	if err := c.Require("Psp Reference", "Type", "Creation Date"); err != nil {
		return err
	}
	if !c.Has("Net Currency") && !c.Has("Gross Currency") {
		return c.Require("Net Currency")
	}
	if !c.Has("Batch Number") && opt.PayoutID == "" {
		return c.Require("Batch Number")
	}
	keys := keyer{}
	batches := batchSums{}
	for {
		if err := c.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return batches.stated(opt.Stated)
			}
			return err
		}
		if c.Len() == 1 && c.Field(0) == "" {
			continue
		}
		l, err := settlementLine(c, opt)
		if err != nil {
			return err
		}
		keys.unique(c, &l)
		if err := batches.add(l); err != nil {
			return c.Err("Net Credit (NC)", err)
		}
		if err := fn(report.Record{Line: l, Raw: c.Raw(settlementColumns...), Pos: c.Line()}); err != nil {
			return err
		}
	}
}

// batchSums adds up each payout batch's lines (by payout id: merchant
// account, batch, net currency), for the batch's balance assertion
// (docs/reference.md, "Provider balances"): a batch whose MerchantPayout
// pays out its whole balance holds nothing once its lines are done (what
// it carries to the next batch leaves by its Balancetransfer line, which
// is one of them). Adyen's report states that by the batch itself: its
// lines, the payout and the carry included, add up to zero.
type batchSums struct {
	order []string
	by    map[string]*batchSum
}

type batchSum struct {
	currency money.Currency
	net      int64
	last     time.Time // the batch's latest line
	paid     bool      // a MerchantPayout line
}

func (b *batchSums) add(l settlement.Line) error {
	if b.by == nil {
		b.by = map[string]*batchSum{}
	}
	s, ok := b.by[l.PayoutID]
	if !ok {
		s = &batchSum{currency: l.Currency}
		b.by[l.PayoutID] = s
		b.order = append(b.order, l.PayoutID)
	}
	var err error
	if s.net, err = settlement.AddChecked(s.net, l.Net); err != nil {
		return err
	}
	if l.OccurredAt.After(s.last) {
		s.last = l.OccurredAt
	}
	if l.SourceType == "MerchantPayout" {
		s.paid = true
	}
	return nil
}

// BatchSource names what states a batch's balance.
const BatchSource = "adyen settlement detail report (batch paid out whole)"

// stated hands fn a balance of zero on each batch paid out whole
// (assertion.BatchAccount), as of its latest line. A batch whose lines do
// not add up to zero after its payout is not paid out whole: nothing is
// stated, and its payout_mismatch (the payout against its lines) is the
// one item that names it; asserting it as well would name one fault
// twice.
func (b *batchSums) stated(fn func(report.Stated) error) error {
	if fn == nil {
		return nil
	}
	for _, id := range b.order {
		s := b.by[id]
		if !s.paid || s.net != 0 {
			continue
		}
		if err := fn(report.Stated{Account: assertion.BatchAccount(Name, id), Currency: s.currency, AsOf: s.last,
			Amount: 0, Source: BatchSource}); err != nil {
			return err
		}
	}
	return nil
}

// keyer makes the lines' keys unique within one file. Only lines whose
// references do not name them (keyed) are remembered: payment lines are
// told apart by their PSP and modification references, and a file of
// 100,000 of them holds no map of 100,000 keys.
type keyer struct {
	seen map[string]bool // version-1 keys given
	same map[string]int  // version-2 contents → lines seen
}

// unique gives l, whose Key is its version-1 key, version 2 when a line
// of the file already has that key.
func (k *keyer) unique(c *report.CSV, l *settlement.Line) {
	if !mayRepeat(c, l) {
		return
	}
	if k.seen == nil {
		k.seen, k.same = map[string]bool{}, map[string]int{}
	}
	parts := make([]string, 0, len(distinguishing)+1)
	parts = append(parts, l.Key)
	for _, col := range distinguishing {
		parts = append(parts, strings.TrimSpace(c.Get(col)))
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	content := hex.EncodeToString(sum[:12])
	k.same[content]++
	if !k.seen[l.Key] {
		k.seen[l.Key] = true
		return
	}
	l.Key = fmt.Sprintf("%s|v2|%s|%d", l.Key, content, k.same[content])
}

// mayRepeat: a line whose references do not identify it (no PSP or no
// modification reference, or a type whose modification reference is free
// text).
func mayRepeat(c *report.CSV, l *settlement.Line) bool {
	switch l.Kind {
	case settlement.KindCharge, settlement.KindRefund, settlement.KindDispute, settlement.KindDisputeReversal:
		return strings.TrimSpace(c.Get("Modification Reference")) == ""
	}
	return true
}

// signed reads an unsigned debit/credit pair as credit − debit.
func debitCredit(c *report.CSV, debit, credit string, cur money.Currency, opt report.Options) (v int64, present bool, err error) {
	d, cr := strings.TrimSpace(c.Get(debit)), strings.TrimSpace(c.Get(credit))
	var dv, cv int64
	if d != "" {
		if dv, err = report.Major(d, cur, opt.DecimalSeparator); err != nil {
			return 0, false, c.Err(debit, err)
		}
		if dv < 0 {
			return 0, false, c.Err(debit, errors.New("debit amounts are unsigned"))
		}
	}
	if cr != "" {
		if cv, err = report.Major(cr, cur, opt.DecimalSeparator); err != nil {
			return 0, false, c.Err(credit, err)
		}
		if cv < 0 {
			return 0, false, c.Err(credit, errors.New("credit amounts are unsigned"))
		}
	}
	return cv - dv, d != "" || cr != "", nil
}

// settlementLine reads the report's current row as a settlement line.
func settlementLine(c *report.CSV, opt report.Options) (settlement.Line, error) {
	typ := strings.TrimSpace(c.Get("Type"))
	l := settlement.Line{Provider: Name, SourceType: typ}
	if typ == "" {
		return l, c.Err("Type", errors.New("empty"))
	}
	nc, gc, err := lineCurrencies(c)
	if err != nil {
		return l, err
	}
	l.Currency, l.OriginalCurrency = nc, gc
	if err := lineAmounts(c, opt, &l); err != nil {
		return l, err
	}
	if rate := strings.TrimSpace(c.Get("Exchange Rate")); rate != "" {
		if !settlement.IsDecimal(normalizeRate(rate)) {
			return l, c.Err("Exchange Rate", fmt.Errorf("%q is not a plain decimal", rate))
		}
		l.ExchangeRate = normalizeRate(rate)
	}
	if l.OccurredAt, err = creationTime(c.Get("Creation Date"), c.Get("TimeZone")); err != nil {
		return l, c.Err("Creation Date", err)
	}
	psp, mod, err := lineIdentity(c, opt, &l)
	if err != nil {
		return l, err
	}
	if err := classify(c, &l, psp, mod); err != nil {
		return l, err
	}
	if err := l.Validate(); err != nil {
		col := ""
		if errors.Is(err, settlement.ErrInvalidAmount) {
			col = "Net Credit (NC)"
		}
		return l, c.Err(col, err)
	}
	return l, nil
}

// lineCurrencies reads the net (settlement) and gross (original)
// currencies; either stands for the other when it is missing.
func lineCurrencies(c *report.CSV) (nc, gc money.Currency, err error) {
	grossCur, netCur := strings.TrimSpace(c.Get("Gross Currency")), strings.TrimSpace(c.Get("Net Currency"))
	if netCur == "" {
		netCur = grossCur
	}
	if grossCur == "" {
		grossCur = netCur
	}
	if nc, err = report.Currency(netCur); err != nil {
		return "", "", c.Err("Net Currency", err)
	}
	if gc, err = report.Currency(grossCur); err != nil {
		return "", "", c.Err("Gross Currency", err)
	}
	return nc, gc, nil
}

// lineAmounts reads the gross, net and costs into l's gross, fee, net and
// original amount (l's currencies set).
func lineAmounts(c *report.CSV, opt report.Options, l *settlement.Line) error {
	nc, gc := l.Currency, l.OriginalCurrency
	gross, hasGross, err := debitCredit(c, "Gross Debit (GC)", "Gross Credit (GC)", gc, opt)
	if err != nil {
		return err
	}
	net, hasNet, err := debitCredit(c, "Net Debit (NC)", "Net Credit (NC)", nc, opt)
	if err != nil {
		return err
	}
	costs, err := lineCosts(c, nc, opt)
	if err != nil {
		return err
	}
	switch {
	case !hasNet && !hasGross:
		// A line with no amount at all (some Balancetransfer lines): zero.
	case !hasNet:
		// Reports without the Net columns: the net is the gross less costs.
		if gc != nc {
			return c.Err("Net Credit (NC)", errors.New("gross and net currencies differ and the net amount is missing"))
		}
		if net, err = settlement.SubChecked(gross, costs); err != nil {
			return c.Err("Net Credit (NC)", err)
		}
	}
	l.Net = net
	if hasGross && gc == nc {
		l.Gross = gross
		if l.Fee, err = settlement.SubChecked(gross, net); err != nil {
			return c.Err("Net Credit (NC)", err)
		}
	} else {
		l.Fee = costs
		if l.Gross, err = settlement.AddChecked(net, costs); err != nil {
			return c.Err("Net Credit (NC)", err)
		}
	}
	l.OriginalAmount = gross
	if !hasGross {
		l.OriginalAmount, l.OriginalCurrency = l.Gross, l.Currency
	}
	return nil
}

// lineCosts adds up the cost columns, in the net currency.
func lineCosts(c *report.CSV, nc money.Currency, opt report.Options) (int64, error) {
	var costs int64
	for _, col := range costColumns {
		s := strings.TrimSpace(c.Get(col))
		if s == "" {
			continue
		}
		v, err := report.Major(s, nc, opt.DecimalSeparator)
		if err != nil {
			return 0, c.Err(col, err)
		}
		if costs, err = settlement.AddChecked(costs, v); err != nil {
			return 0, c.Err(col, err)
		}
	}
	return costs, nil
}

// lineIdentity sets l's payout (merchant/batch/currency), key and line id,
// and returns the PSP and modification references.
func lineIdentity(c *report.CSV, opt report.Options, l *settlement.Line) (psp, mod string, err error) {
	psp, mod = strings.TrimSpace(c.Get("Psp Reference")), strings.TrimSpace(c.Get("Modification Reference"))
	merchant, batch := strings.TrimSpace(c.Get("Merchant Account")), strings.TrimSpace(c.Get("Batch Number"))
	if batch == "" {
		batch = opt.PayoutID
	}
	if batch == "" {
		return psp, mod, c.Err("Batch Number", errors.New("empty"))
	}
	nc := string(l.Currency)
	l.PayoutID = batch + "/" + nc
	if merchant != "" {
		l.PayoutID = merchant + "/" + l.PayoutID
	}
	l.Key = strings.Join([]string{merchant, batch, l.SourceType, psp, mod, nc}, "|")
	l.LineID = mod
	return psp, mod, nil
}

// classify gives l its kind from the line type, and the payment and the
// capture, refund or dispute it reports.
func classify(c *report.CSV, l *settlement.Line, psp, mod string) error {
	typ := l.SourceType
	paymentLine := func(kind settlement.Kind) error {
		if psp == "" {
			return c.Err("Psp Reference", fmt.Errorf("a %s line needs the payment's PSP reference", typ))
		}
		if mod == "" {
			mod = psp // automatic capture: the payment's reference [AD10]
		}
		l.Kind, l.PaymentKey = kind, psp
		return nil
	}
	var err error
	switch typ {
	case "Settled", "SettledBulk":
		err = paymentLine(settlement.KindCharge)
		l.CaptureID = mod
	case "Refunded", "RefundedBulk":
		err = paymentLine(settlement.KindRefund)
		l.RefundID = mod
	case "Chargeback":
		err = paymentLine(settlement.KindDispute)
		l.DisputeID = mod
	case "ChargebackReversed":
		err = paymentLine(settlement.KindDisputeReversal)
		l.DisputeID = mod
	case "RefundedReversed":
		// "Refund reversed: the refund was returned and credited back to the
		// merchant" [AD3]: the refund (Modification Reference, the refund's
		// PSP reference, as REFUNDED_REVERSED carries it) failed after it
		// was paid; the line reports the money that came back
		// (settlement.ReversalRefund), posted once with the webhook.
		err = paymentLine(settlement.KindAdjustment)
		l.RefundID, l.Reversal = mod, settlement.ReversalRefund
	case "Fee", "MiscCosts", "PaymentCost", "AuthorisationSchemeFee", "InvoiceDeduction":
		// Costs: "Adyen transaction fees", "costs that could not be matched
		// with any specific transactions", "separate fees being charged for
		// authorisations", PaymentCost "costs against a payment" (Klarna,
		// ELO), InvoiceDeduction "a monthly invoice that is credited/deducted
		// from the account" [AD3, AD5]: a fee known only from the report,
		// charged on a Net Debit, returned on a Net Credit.
		l.Kind = settlement.KindFee
		if typ == "PaymentCost" && psp != "" {
			l.PaymentKey = psp
		}
	case "MerchantPayout":
		// "Amount that is paid for a settlement currency from the payable
		// batch to the merchant's bank account" [AD3]: a Net Debit. A Net
		// Credit is Adyen debiting the bank into the batch: a paid payout
		// that moves money the other way (CONTRACT), not a returned one.
		l.Kind, l.NoWebhook, l.BankDebit = settlement.KindPayout, true, l.Gross > 0
	case "BankInstructionReturned":
		// "Credit for previous MerchantPayout which have not been processed
		// successfully or which have been returned to Adyen" [AD3].
		l.Kind, l.NoWebhook = settlement.KindPayout, true
	case "DepositCorrection", "ReserveAdjustment":
		// "Funds being withheld from/release to the account due to a change
		// in the required security deposit" [AD3]; "a deposit ... is filled
		// by withholding settlements until the deposit amount is met"
		// [AD4]. Reserve adjustment journals "reflect changes made to your
		// Reserve balance ... when funds are withheld or released"
		// (help.adyen.com, what-is-the-reserve-adjustment-on-my-activity-log).
		// Still the merchant's money, held apart: provider:adyen:reserve.
		l.Kind, l.Counterpart = settlement.KindAdjustment, settlement.CounterpartReserve
	case "MatchedStatement":
		// "Wire transfer from merchant booked in the account" [AD3]: money
		// from the merchant's bank into the balance (a Net Credit).
		l.Kind, l.Counterpart = settlement.KindAdjustment, settlement.CounterpartBank
	default:
		// Balancetransfer: "balance transfer to or from subsequent payout
		// batches in order to process negative payable/capture balances"
		// [AD3]: the balance moves between batches, its total unchanged;
		// the line posts nothing and counts in its batch (the batch that
		// carries a negative balance forward adds up to no payout, the
		// batch that takes it over to its payout). SecondChargeback: the
		// webhook (SECOND_CHARGEBACK) posts what it means. ManualCorrected ("manual
		// booking/adjustment by Adyen"), InternalCompanyPayout and the
		// rest name no account the money went to: recorded and counted in
		// the batch, posting nothing.
		l.Kind = settlement.KindAdjustment
	}
	return err
}

// normalizeRate accepts the rate with a leading dot (".5931"), as Adyen's
// files write decimals below one.
func normalizeRate(s string) string {
	if strings.HasPrefix(s, ".") {
		return "0" + s
	}
	return s
}

// zones are the time-zone abbreviations Adyen writes in the TimeZone column
// (the account's setting; it switches across DST within one file).
var zones = map[string]int{ // offset from UTC in minutes
	"UTC": 0, "GMT": 0, "WET": 0, "BST": 60, "WEST": 60, "CET": 60, "CEST": 120, "EET": 120, "EEST": 180,
	"MSK": 180, "GST": 240, "IST": 330, "SGT": 480, "HKT": 480, "AWST": 480, "JST": 540, "KST": 540,
	"AEST": 600, "AEDT": 660, "NZST": 720, "NZDT": 780, "EST": -300, "EDT": -240, "CST": -360, "CDT": -300,
	"MST": -420, "MDT": -360, "PST": -480, "PDT": -420, "AST": -240, "ADT": -180, "BRT": -180, "ART": -180,
}

// creationTime reads "YYYY-MM-DD HH:MM:SS" in the zone named by its
// abbreviation. An abbreviation not listed is read as UTC: the time is for
// audit and ordering, and refusing a whole report over it would be worse.
func creationTime(s, zone string) (time.Time, error) {
	t, err := time.Parse("2006-01-02 15:04:05", strings.TrimSpace(s))
	if err != nil {
		if t, err = time.Parse(time.RFC3339, strings.TrimSpace(s)); err == nil {
			return t.UTC(), nil
		}
		return time.Time{}, fmt.Errorf("%q is not a date-time (YYYY-MM-DD HH:MM:SS)", s)
	}
	off, ok := zones[strings.ToUpper(strings.TrimSpace(zone))]
	if !ok {
		return t, nil
	}
	return t.Add(-time.Duration(off) * time.Minute).UTC(), nil
}
