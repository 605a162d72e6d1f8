package stripe

// Settlement reports: Stripe's itemized payout reconciliation report (CSV,
// report types payout_reconciliation.itemized.* and the same vocabulary in
// balance_change_from_activity.itemized.*) and a Balance Transactions list
// (JSON, GET /v1/balance_transactions). Both describe balance transactions
// (txn_…); a line's dedup key is its txn id, so the same transaction read
// from either format is one delivery.
//
// Ids, matched to this package's webhook normalizer (normalize.go):
//   - PaymentKey: payment_intent_id, else (a legacy charge without a
//     PaymentIntent) charge_id — the webhook's payment_intent, else charge.
//   - charge rows: CaptureID = source_id (the charge ch_…/py_…), which is
//     the business id charge.succeeded and payment_intent.succeeded give
//     the capture; charge_id when source_id is absent.
//   - refund rows: RefundID = source_id (re_…), as refund.* and
//     charge.refunded name the refund; CaptureID = charge_id.
//   - dispute and dispute_reversal rows: DisputeID = source_id (du_…), as
//     charge.dispute.* name the dispute; CaptureID = charge_id.
//   - payout rows: PayoutID = source_id (po_…), as payout.paid names it.
//     Every other row's PayoutID is automatic_payout_id.
//
// Units and signs [docs.stripe.com/reports/payout-reconciliation,
// /reports/api, /api/balance_transactions]: the CSV carries major units
// ("10.00"; JPY "1000"), the API minor units as Stripe counts them (which
// departs from ISO 4217 for a few currencies, see apiToISO). gross and net
// are signed (money out negative), fee is what Stripe charged (positive),
// net = gross − fee: exactly the settlement.Line convention. currency is the
// settlement currency; customer_facing_amount/_currency (CSV) and the
// expanded source's amount/currency (API) are the presentment amount, and
// the API's exchange_rate is kept as its exact decimal text.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// reportColumns are the columns the CSV importer reads, for the audit copy.
var reportColumns = []string{
	"balance_transaction_id", "created_utc", "created", "available_on_utc", "available_on",
	"currency", "gross", "fee", "net", "reporting_category", "source_id",
	"customer_facing_amount", "customer_facing_currency", "automatic_payout_id",
	"charge_id", "payment_intent_id",
}

var _ report.Parser = ParseSettlement

// ParseSettlement reads either Stripe format, told apart by the first
// non-blank byte: '{' is a Balance Transactions list, anything else the CSV
// report.
func ParseSettlement(r io.Reader, opt report.Options, fn report.Func) error {
	br := newPeekReader(r)
	c, err := br.firstNonSpace()
	if err != nil {
		return err
	}
	if c == '{' {
		return ParseBalanceTransactions(br, opt, fn)
	}
	return ParseReport(br, opt, fn)
}

// ParseReport streams the itemized payout reconciliation report (CSV).
// Columns are found by header name, whatever their order; unknown columns
// (metadata, customer, card columns…) are ignored. Required:
// balance_transaction_id, currency, gross, fee, net, reporting_category, and
// created_utc or created.
func ParseReport(r io.Reader, opt report.Options, fn report.Func) error {
	c := report.NewCSV(r)
	if err := c.ReadHeader(); err != nil {
		return err
	}
	if isBalanceSummary(c) {
		return parseBalanceSummary(c, opt) // balance_summary.go
	}
	if err := c.Require("balance_transaction_id", "currency", "gross", "fee", "net", "reporting_category"); err != nil {
		return err
	}
	created := "created_utc"
	if !c.Has(created) {
		created = "created"
	}
	if err := c.Require(created); err != nil {
		return err
	}
	available := "available_on_utc"
	if !c.Has(available) {
		available = "available_on"
	}
	// Stripe lets the user choose the columns. Without payment_intent_id a
	// line of a charge that belongs to a PaymentIntent cannot be told from
	// a legacy charge: keyed by its charge, it would start a second stream
	// beside the webhooks' payment-stripe-pi_… and book the capture twice.
	// Such a line is linked through the charge→PaymentIntent ids the
	// ledger knows (opt.Link: the webhooks name both), and a file with a
	// line whose charge the ledger does not know is refused, naming the
	// column and the line (docs/settlement.md); with the column present
	// and empty, the charge is a legacy one.
	linkable := c.Has("payment_intent_id")
	for {
		if err := c.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if c.Len() == 1 && c.Field(0) == "" {
			continue // a blank line
		}
		l, err := reportLine(c, opt, created, available)
		if err != nil {
			return err
		}
		if !linkable && l.PaymentKey != "" {
			if err := link(&l, c.Line(), opt); err != nil {
				return err
			}
		}
		if err := fn(report.Record{Line: l, Raw: c.Raw(reportColumns...), Pos: c.Line()}); err != nil {
			return err
		}
	}
}

// link gives l, a line of a report without payment_intent_id (its
// PaymentKey is its charge), the payment the ledger knows its charge by
// (report.Options.Link), or refuses the file naming the column and the line.
func link(l *settlement.Line, line int, opt report.Options) error {
	charge := l.PaymentKey
	if opt.Link != nil {
		key, ok, err := opt.Link(l.DedupKey(), charge)
		if err != nil {
			return err
		}
		if ok {
			l.PaymentKey = key
			return nil
		}
	}
	return &report.ParseError{Line: line, Column: "payment_intent_id", Err: fmt.Errorf(
		"the header has no column \"payment_intent_id\" and no webhook linked charge %s to its payment: line %s cannot be linked (add the column to the report)",
		charge, l.LineID)}
}

func reportLine(c *report.CSV, opt report.Options, created, available string) (settlement.Line, error) {
	l := settlement.Line{Provider: Name, LineID: c.Get("balance_transaction_id"), SourceType: c.Get("reporting_category")}
	if l.LineID == "" {
		return l, c.Err("balance_transaction_id", errors.New("empty"))
	}
	cur, err := report.Currency(c.Get("currency"))
	if err != nil {
		return l, c.Err("currency", err)
	}
	l.Currency = cur
	for _, a := range []struct {
		col string
		dst *int64
	}{{"gross", &l.Gross}, {"fee", &l.Fee}, {"net", &l.Net}} {
		if *a.dst, err = report.Major(c.Get(a.col), cur, opt.DecimalSeparator); err != nil {
			return l, c.Err(a.col, err)
		}
	}
	if l.OccurredAt, err = reportTime(c.Get(created)); err != nil {
		return l, c.Err(created, err)
	}
	if s := c.Get(available); s != "" {
		if l.AvailableOn, err = reportTime(s); err != nil {
			return l, c.Err(available, err)
		}
	}
	l.OriginalAmount, l.OriginalCurrency = l.Gross, l.Currency
	if s := c.Get("customer_facing_amount"); s != "" {
		oc, err := report.Currency(c.Get("customer_facing_currency"))
		if err != nil {
			return l, c.Err("customer_facing_currency", err)
		}
		oa, err := report.Major(s, oc, opt.DecimalSeparator)
		if err != nil {
			return l, c.Err("customer_facing_amount", err)
		}
		l.OriginalAmount, l.OriginalCurrency = signedLike(oa, l.Gross), oc
	}
	source, charge, pi := c.Get("source_id"), c.Get("charge_id"), c.Get("payment_intent_id")
	classify(&l, l.SourceType, source, charge, pi, c.Get("automatic_payout_id"), opt)
	if err := check(l); err != nil {
		col := ""
		if errors.Is(err, settlement.ErrInvalidAmount) {
			col = "net"
		}
		return l, c.Err(col, err)
	}
	return l, nil
}

// classify sets the kind and the business ids of a line from its reporting
// category (Stripe: "use reporting_category, not type, for accounting") and
// its source, charge and PaymentIntent ids.
func classify(l *settlement.Line, category, source, charge, pi, payout string, opt report.Options) {
	l.PayoutID = payout
	if l.PayoutID == "" {
		l.PayoutID = opt.PayoutID
	}
	if charge == "" && category == "charge" {
		charge = source
	}
	l.PaymentKey = pi
	if l.PaymentKey == "" {
		l.PaymentKey = charge
	}
	l.CaptureID = charge
	switch category {
	case "charge":
		l.Kind = settlement.KindCharge
		if source != "" {
			l.CaptureID = source
		}
	case "refund":
		l.Kind, l.RefundID = settlement.KindRefund, source
	case "dispute":
		l.Kind, l.DisputeID = settlement.KindDispute, source
	case "dispute_reversal":
		l.Kind, l.DisputeID = settlement.KindDisputeReversal, source
	case "fee", "tax":
		l.Kind = settlement.KindFee
	case "payout", "payout_reversal":
		l.Kind = settlement.KindPayout
		if source != "" {
			l.PayoutID = source
		}
	case "risk_reserved_funds":
		// "Funds held by Stripe to mitigate risk" and their release
		// (docs.stripe.com/reports/reporting-categories; BT types
		// reserve_transaction, and reserve_hold / reserve_release since
		// 2026-01-28.clover): moved between the balance and the reserve,
		// as Adyen's and Square's reserve lines.
		l.Kind, l.Counterpart = settlement.KindAdjustment, settlement.CounterpartReserve
	default:
		// partial_capture_reversal, charge_failure, refund_failure,
		// transfers, topups...: recorded, counted in the payout.
		l.Kind = settlement.KindAdjustment
		if strings.HasPrefix(source, "re_") || strings.HasPrefix(source, "pyr_") {
			l.RefundID = source
		}
	}
	// "refund_failure: Refund failures ... credited back to your balance"
	// and "charge_failure: ... a charge that failed after it was captured
	// (e.g. an ACH debit returned)" (docs.stripe.com/reports/
	// reporting-categories): reversals of a fact that posted
	// (settlement.Line.Reversal); the domain posts them once, whichever of
	// the line and the webhook comes first.
	switch {
	case category == "refund_failure" && l.RefundID != "" && l.PaymentKey != "":
		l.Reversal = settlement.ReversalRefund
	case category == "charge_failure" && l.PaymentKey != "":
		if strings.HasPrefix(source, "ch_") || strings.HasPrefix(source, "py_") {
			l.CaptureID = source
		}
		if l.CaptureID != "" {
			l.Reversal = settlement.ReversalCapture
		}
	}
	if l.PaymentKey == "" && l.Kind != settlement.KindCharge && l.Kind != settlement.KindRefund &&
		l.Kind != settlement.KindDispute && l.Kind != settlement.KindDisputeReversal {
		l.CaptureID = ""
	}
}

// check validates a line; a payment line without any id to join its payment
// is malformed.
func check(l settlement.Line) error {
	return l.Validate()
}

// signedLike returns |v| with the sign of like: reports give presentment
// amounts unsigned or signed inconsistently; the line's gross says the
// direction.
func signedLike(v, like int64) int64 {
	if v < 0 {
		v = -v
	}
	if like < 0 {
		return -v
	}
	return v
}

// reportTime reads the report's time text: "2006-01-02 15:04:05" (what the
// downloads carry, no offset: the *_utc columns are UTC), RFC 3339, or a
// bare date.
func reportTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05", time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date-time (YYYY-MM-DD HH:MM:SS)", s)
}

// ParseBalanceTransactions streams a Balance Transactions list object
// ({"object":"list","data":[…],"has_more":…}), one element at a time. See
// ParseBalanceTransaction for each element.
func ParseBalanceTransactions(r io.Reader, opt report.Options, fn report.Func) error {
	return report.JSONWalk{Lists: map[string]func(json.RawMessage, int, int) error{
		"data": func(raw json.RawMessage, i, line int) error {
			l, err := ParseBalanceTransaction(raw, opt)
			if err != nil {
				var pe *report.ParseError
				if errors.As(err, &pe) {
					pe.Line = line
					if pe.Column == "" {
						pe.Column = fmt.Sprintf("data[%d]", i)
					} else {
						pe.Column = fmt.Sprintf("data[%d].%s", i, pe.Column)
					}
					return pe
				}
				return &report.ParseError{Line: line, Column: fmt.Sprintf("data[%d]", i), Err: err}
			}
			return fn(report.Record{Line: l, Raw: raw, Pos: line})
		},
	}}.Walk(r)
}

// balanceTransaction is the part of a BalanceTransaction object we read.
type balanceTransaction struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Amount            *json.Number    `json:"amount"`
	Fee               *json.Number    `json:"fee"`
	Net               *json.Number    `json:"net"`
	Currency          string          `json:"currency"`
	Type              string          `json:"type"`
	ReportingCategory string          `json:"reporting_category"`
	Created           json.Number     `json:"created"`
	AvailableOn       json.Number     `json:"available_on"`
	ExchangeRate      *json.Number    `json:"exchange_rate"`
	Source            json.RawMessage `json:"source"`
}

// expandedSource is the part of an expanded source (charge, refund,
// dispute, payout) we read.
type expandedSource struct {
	ID             string          `json:"id"`
	Object         string          `json:"object"`
	Amount         *json.Number    `json:"amount"`
	AmountCaptured *json.Number    `json:"amount_captured"`
	Currency       string          `json:"currency"`
	Charge         json.RawMessage `json:"charge"`
	PaymentIntent  json.RawMessage `json:"payment_intent"`
	ArrivalDate    json.Number     `json:"arrival_date"` // a payout's
	// A payout's statement_descriptor and trace_id (normalize.go's
	// bankRefs reads them the same way from its webhooks).
	StatementDescriptor string `json:"statement_descriptor"`
	TraceID             struct {
		Status string `json:"status"`
		Value  string `json:"value"`
	} `json:"trace_id"`
}

// ParseBalanceTransaction maps one BalanceTransaction object to a line,
// the same way as a report row. Payment rows need the source expanded
// (expand[]=data.source, as the stripeapi client asks): only the source
// object names the PaymentIntent that keys the payment's stream and the
// customer-facing amount. Errors are *report.ParseError with the field's
// path inside the object (Line 0: the caller knows the line).
func ParseBalanceTransaction(raw []byte, opt report.Options) (settlement.Line, error) {
	var bt balanceTransaction
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&bt); err != nil {
		return settlement.Line{}, &report.ParseError{Err: fmt.Errorf("not a balance transaction object: %v", err)}
	}
	fail := func(col string, err error) (settlement.Line, error) {
		return settlement.Line{}, &report.ParseError{Column: col, Err: err}
	}
	if bt.ID == "" {
		return fail("id", errors.New("missing"))
	}
	if bt.Object != "" && bt.Object != "balance_transaction" {
		return fail("object", fmt.Errorf("%q is not a balance_transaction", bt.Object))
	}
	l := settlement.Line{Provider: Name, LineID: bt.ID, SourceType: bt.ReportingCategory}
	if l.SourceType == "" {
		l.SourceType = bt.Type
	}
	cur, err := report.Currency(bt.Currency)
	if err != nil {
		return fail("currency", err)
	}
	l.Currency = cur
	for _, a := range []struct {
		col string
		n   *json.Number
		dst *int64
	}{{"amount", bt.Amount, &l.Gross}, {"fee", bt.Fee, &l.Fee}, {"net", bt.Net, &l.Net}} {
		if a.n == nil {
			return fail(a.col, errors.New("missing"))
		}
		if *a.dst, err = apiToISO(string(*a.n), cur); err != nil {
			return fail(a.col, err)
		}
	}
	if l.OccurredAt, err = unixTime(bt.Created); err != nil {
		return fail("created", err)
	}
	if bt.AvailableOn != "" {
		if l.AvailableOn, err = unixTime(bt.AvailableOn); err != nil {
			return fail("available_on", err)
		}
	}
	if bt.ExchangeRate != nil {
		if l.ExchangeRate, err = plainDecimal(string(*bt.ExchangeRate)); err != nil {
			return fail("exchange_rate", err)
		}
	}
	l.OriginalAmount, l.OriginalCurrency = l.Gross, l.Currency
	category := bt.ReportingCategory
	if category == "" {
		category = categoryOfType(bt.Type)
	}
	var sourceID, charge, pi string
	var src expandedSource
	expandedObj := false
	switch {
	case len(bt.Source) == 0 || string(bt.Source) == "null":
	case bt.Source[0] == '"':
		if err := json.Unmarshal(bt.Source, &sourceID); err != nil {
			return fail("source", err)
		}
	default:
		d := json.NewDecoder(bytes.NewReader(bt.Source))
		d.UseNumber()
		if err := d.Decode(&src); err != nil {
			return fail("source", fmt.Errorf("not an id or an object: %v", err))
		}
		expandedObj, sourceID = true, src.ID
		if pi, err = refID(src.PaymentIntent); err != nil {
			return fail("source.payment_intent", err)
		}
		if src.Object == "charge" {
			charge = src.ID
		} else if charge, err = refID(src.Charge); err != nil {
			return fail("source.charge", err)
		}
	}
	switch category {
	case "charge", "refund", "dispute", "dispute_reversal":
		if !expandedObj {
			return fail("source", errors.New("a payment's balance transaction needs its source expanded (expand[]=data.source): only the source names the payment"))
		}
		amt := src.Amount
		if src.AmountCaptured != nil && category == "charge" {
			amt = src.AmountCaptured
		}
		// Unconverted, the presentment amount is the gross: a partial
		// capture's charge BT is "for the full amount of the authorization"
		// [docs.stripe.com/reports/reporting-categories], not amount_captured.
		if strings.EqualFold(src.Currency, bt.Currency) {
			amt = nil
		}
		if amt != nil && src.Currency != "" {
			oc, err := report.Currency(src.Currency)
			if err != nil {
				return fail("source.currency", err)
			}
			oa, err := apiToISO(string(*amt), oc)
			if err != nil {
				return fail("source.amount", err)
			}
			l.OriginalAmount, l.OriginalCurrency = signedLike(oa, l.Gross), oc
		}
	}
	classify(&l, category, sourceID, charge, pi, "", opt)
	if col, err := btFinish(&l, category, sourceID, expandedObj, src, opt); err != nil {
		return fail(col, err)
	}
	if err := check(l); err != nil {
		col := ""
		if errors.Is(err, settlement.ErrInvalidAmount) {
			col = "net"
		}
		return fail(col, err)
	}
	return l, nil
}

// btFinish completes a balance transaction's line after classify: a
// payment's line whose source is a bare id (not expanded) is linked
// through the charge the ledger knows, or refused naming what is missing
// (never recorded attached to no payment); a payout's line takes the
// payout's own arrival_date ("Date that you can expect the payout to
// arrive in the bank", docs.stripe.com/api/payouts/object) as its
// AvailableOn, which the payout's arrival date is read from. It returns
// the column an error is about.
func btFinish(l *settlement.Line, category, sourceID string, expanded bool, src expandedSource, opt report.Options) (string, error) {
	if !expanded && l.PaymentKey == "" && paymentCategory(category) {
		if err := linkBare(l, category, sourceID, opt); err != nil {
			return "source", err
		}
	}
	if l.Kind == settlement.KindPayout && src.Object == "payout" && src.ArrivalDate != "" {
		var err error
		if l.AvailableOn, err = unixTime(src.ArrivalDate); err != nil {
			return "source.arrival_date", err
		}
	}
	if l.Kind == settlement.KindPayout && src.Object == "payout" {
		l.PayoutDescriptor = bankRef(src.StatementDescriptor)
		if src.TraceID.Status == "supported" {
			l.PayoutTraceID = bankRef(src.TraceID.Value)
		}
	}
	return "", nil
}

// paymentCategory: a reporting category whose balance transaction belongs
// to a payment (besides charge, refund, dispute and dispute_reversal, which
// need the source expanded).
func paymentCategory(category string) bool {
	switch category {
	case "partial_capture_reversal", "refund_failure", "charge_failure":
		return true
	}
	return false
}

// linkBare gives l, a payment's line whose source is the bare id source,
// the payment the ledger knows its charge by (report.Options.Link: the
// webhooks named the charge and its PaymentIntent), or says what is
// missing. A refund id names no charge: the source must be expanded.
func linkBare(l *settlement.Line, category, source string, opt report.Options) error {
	if !strings.HasPrefix(source, "ch_") && !strings.HasPrefix(source, "py_") {
		return fmt.Errorf("a %s balance transaction whose source %q is not expanded names no payment: list it with expand[]=data.source", category, source)
	}
	if opt.Link != nil {
		key, ok, err := opt.Link(l.DedupKey(), source)
		if err != nil {
			return err
		}
		if ok {
			l.PaymentKey, l.CaptureID = key, source
			if category == "charge_failure" {
				l.Reversal = settlement.ReversalCapture
			}
			return nil
		}
	}
	return fmt.Errorf("a %s balance transaction names charge %s, which no webhook linked to its payment: line %s cannot be linked (list it with expand[]=data.source)",
		category, source, l.LineID)
}

// categoryOfType maps a BT type to its reporting category, for objects
// without reporting_category [docs.stripe.com/reports/reporting-categories].
func categoryOfType(t string) string {
	switch t {
	case "charge", "payment":
		return "charge"
	case "refund", "payment_refund":
		return "refund"
	case "stripe_fee", "stripe_fx_fee", "application_fee":
		return "fee"
	case "tax_fee":
		return "tax"
	case "payout":
		return "payout"
	case "payout_cancel", "payout_failure":
		return "payout_reversal"
	case "reserve_transaction", "reserve_hold", "reserve_release":
		return "risk_reserved_funds"
	}
	return t
}

// refID reads an expandable reference: an id string, an object with an id,
// or null.
func refID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var o struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return "", fmt.Errorf("not an id or an object: %v", err)
	}
	return o.ID, nil
}

func unixTime(n json.Number) (time.Time, error) {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v <= 0 {
		return time.Time{}, fmt.Errorf("%q is not a unix timestamp", string(n))
	}
	return time.Unix(v, 0).UTC(), nil
}

// apiToISO converts an integer amount in Stripe's API minor units into ISO
// 4217 minor units of c through money.StripeAPI, the table the webhook
// path (toISO) uses too: exactly (an ISK amount not divisible by 100 is an
// error, never rounded), within ±10^15.
func apiToISO(s string, c money.Currency) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not an integer amount", money.ErrInvalidAmount, s)
	}
	if v, err = money.StripeAPI.ToISO(v, c); err != nil {
		return 0, err
	}
	if v > settlement.MaxAmount || v < -settlement.MaxAmount {
		return 0, fmt.Errorf("%w: %s %s is beyond 10^15 minor units", money.ErrInvalidAmount, s, c)
	}
	return v, nil
}

// plainDecimal writes a JSON number as an exact plain decimal: Stripe's
// exchange_rate is a JSON float, which may come in exponent form
// ("6.3e-05"). The text is converted exactly (big.Rat), never through a
// float64.
func plainDecimal(s string) (string, error) {
	if settlement.IsDecimal(s) {
		return s, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return "", fmt.Errorf("%q is not a non-negative decimal", s)
	}
	for digits := 0; digits <= 40; digits++ {
		out := r.FloatString(digits)
		if back, _ := new(big.Rat).SetString(out); back.Cmp(r) == 0 {
			return out, nil
		}
	}
	return "", fmt.Errorf("%q has more than 40 decimal places", s)
}

// peekReader lets ParseSettlement look at the first non-blank byte and then
// hand the whole stream on.
type peekReader struct {
	r    io.Reader
	head []byte
}

func newPeekReader(r io.Reader) *peekReader { return &peekReader{r: r} }

func (p *peekReader) firstNonSpace() (byte, error) {
	buf := make([]byte, 512)
	for {
		n, err := p.r.Read(buf)
		p.head = append(p.head, buf[:n]...)
		for _, c := range bytes.TrimPrefix(p.head, []byte("\uFEFF")) {
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				return c, nil
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, &report.ParseError{Line: 1, Err: errors.New("empty file")}
			}
			return 0, err
		}
		if len(p.head) > 1<<20 {
			return 0, &report.ParseError{Line: 1, Err: errors.New("no content in the first MiB")}
		}
	}
}

func (p *peekReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.r.Read(b)
}
