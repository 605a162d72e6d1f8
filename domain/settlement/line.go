// Package settlement owns the provider-neutral form of one settlement-report
// line: what a provider's book of record says about one movement of its
// balance (a settled capture, a refund, a chargeback, a fee, a payout, a
// conversion), with the business ids that tie it to what the webhooks said.
//
// Report importers (adapters/providers/<p>/settlement.go) produce Lines; the
// payment and payout aggregates (domain/payment, settle*.go) decide what a
// Line adds to the ledger. This package is pure: no I/O, no clock.
//
// # Signs and units
//
// Every amount is int64 minor units of ISO 4217 (USD cents, JPY yen), and
// signed from the provider balance's point of view, whatever the report's
// own convention (Stripe and Square sign; Adyen and PayPal use unsigned
// amounts and a debit/credit column; the importers normalize):
//
//   - Gross: the movement before fees, in the settlement currency. Positive
//     when money comes into the balance (a capture, a won dispute), negative
//     when it leaves (a refund, a chargeback, a payout).
//   - Fee: what the provider charged for the line, in the settlement
//     currency. Positive when charged, negative when a fee is returned (a
//     Square refund gives back part of the processing fee).
//   - Net = Gross − Fee: the line's effect on the balance. A payout of 100.00
//     is Gross −10000, Fee 0, Net −10000.
//
// OriginalAmount and OriginalCurrency are the customer-facing (presentment)
// amount, signed like Gross; they equal Gross and Currency when nothing was
// converted. ExchangeRate is the provider's rate, kept as the exact decimal
// text it published ("1.234"), never a float; empty when not published.
//
// # How a line reaches the ledger
//
//	parse := stripe.ParseSettlement // or adyen., paypal., square.ParseSettlement (report.Parser)
//	err := parse(file, report.Options{}, func(r report.Record) error {
//		ev := delivery.Settled(r.Line, r.Raw) // dedup key "settle:<line id>", payload hash over the money facts
//		return ingest(ev)                     // the same gate as a webhook
//	})
//
// delivery.Settled routes the line: a line with a PaymentKey joins
// payment-<provider>-<payment key>, the stream its webhooks feed; one
// without joins payout-<provider>-<payout id> (or, with no payout,
// payout-<provider>-<dedup key>). payment.Decide does the rest (settle.go).
package settlement

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/money"
)

// Kind is what a line is about, independent of each provider's row types.
// The values are stable: they are stored in events and read models.
type Kind string

const (
	// KindCharge: a captured payment settled into the balance (Stripe
	// charge, Adyen Settled, PayPal T00nn, Square CHARGE). CaptureID names
	// the capture as the webhooks do.
	KindCharge Kind = "charge"
	// KindRefund: a refund debited from the balance. RefundID as the
	// webhooks name it; CaptureID when the report names the refunded capture.
	KindRefund Kind = "refund"
	// KindDispute: a chargeback debited from the balance. DisputeID as the
	// webhooks name it, when the report carries it.
	KindDispute Kind = "dispute"
	// KindDisputeReversal: a chargeback's funds reinstated (dispute won).
	KindDisputeReversal Kind = "dispute_reversal"
	// KindFee: a fee not part of another line (Stripe fee rows, Adyen Fee
	// lines, a Square FEE entry, PayPal fee events).
	KindFee Kind = "fee"
	// KindPayout: the balance paid out to the bank (negative Gross), or a
	// failed payout returned to it (positive Gross), or, with BankDebit, a
	// paid payout that moved money the other way (positive Gross: the
	// provider debited the bank account). PayoutID is the payout.
	KindPayout Kind = "payout"
	// KindFX: one leg of a currency conversion reported as its own line
	// (PayPal T0200): money leaves the balance in one currency (negative)
	// and arrives in another (positive), each leg a line.
	KindFX Kind = "fx"
	// KindAdjustment: anything else that moved the balance (reserves,
	// corrections, partial capture reversals, refund failures, Connect
	// transfers...). Recorded and counted in its payout; posts nothing on
	// its own, unless its Counterpart names where its money went.
	KindAdjustment Kind = "adjustment"
)

// Counterparts of an adjustment line (Line.Counterpart): the account its
// net moves to or from the provider balance. Stored names: never change one.
const (
	// CounterpartReserve: money the provider withholds from the balance
	// into a reserve (negative net) or releases from it (positive net):
	// Adyen DepositCorrection, ReserveAdjustment; Square RESERVE_HOLD,
	// RESERVE_RELEASE.
	CounterpartReserve = "reserve"
	// CounterpartBank: money the merchant's bank sent into the balance
	// outside a payout (positive net), or the reverse: Adyen
	// MatchedStatement ("wire transfer from merchant booked in the account").
	CounterpartBank = "bank"
)

// SourceBalanceGap is the SourceType of an adjustment line that reports
// a break in a provider's running balance (Alipay's 账务明细 账户余额,
// WeChat Pay's 资金账单 账户结余): a line whose printed balance is not the
// previous line's plus its amount. Gross (= Net) is the unexplained
// movement; the line posts nothing and opens settlement_mismatch naming the
// line it was found at (its Key). A stored name: never change it.
const SourceBalanceGap = "balance_gap"

// SourcePartialCaptureReversal is the SourceType of an adjustment line
// that reverses the uncaptured part of capture CaptureID (Stripe's
// reporting_category partial_capture_reversal: a partially captured charge
// has a charge line "for the full amount of the authorization" and this one
// "reversing the uncaptured portion", docs.stripe.com/reports/
// reporting-categories). A stored name: never change it.
const SourcePartialCaptureReversal = "partial_capture_reversal"

// Kinds lists every kind, for validation and for readers' filters.
func Kinds() []Kind {
	return []Kind{KindCharge, KindRefund, KindDispute, KindDisputeReversal, KindFee, KindPayout, KindFX, KindAdjustment}
}

// MaxAmount bounds every amount of a line (10^15 minor units, docs/reference.md).
// It leaves room for Gross − Fee and for sums of many lines in int64.
const MaxAmount = 1_000_000_000_000_000

// MaxIDBytes bounds each identifier; it matches delivery.MaxIDBytes (the
// ids end up in indexed text columns).
const MaxIDBytes = 512

// Line is one line of a settlement report, normalized. See the package doc
// for signs and units.
//
// The JSON names are stored names: the inbox keeps each line's delivery
// with its line in this shape (delivery.EncodeNormalized) and re-drives
// rows written long ago, so a name never follows a renamed Go field: the
// names are those the fields had when the first rows were stored
// (domain/delivery/testdata/normalized keeps them). The stored events carry
// a line in a shape of their own (payment's wireLine).
type Line struct {
	Provider string `json:"Provider"` // "stripe", "adyen", "paypal", "square"
	Kind     Kind   `json:"Kind"`
	// SourceType is the provider's own row type, kept for audit:
	// reporting_category or BT type (Stripe), Type (Adyen), the T-code
	// (PayPal), the entry type (Square).
	SourceType string `json:"SourceType"`
	// LineID is the provider's id of the line itself when it has one
	// (Stripe txn_…, Square poe_…, PayPal Transaction ID). Adyen lines have
	// none; their key is built from the batch and references (see DedupKey).
	LineID string `json:"LineID"`

	// PaymentKey is the payment the line belongs to, exactly as the
	// provider's webhook normalizer keys the payment stream; empty for
	// lines tied to no payment (payouts, account fees).
	PaymentKey string `json:"PaymentKey"`
	CaptureID  string `json:"CaptureID"` // capture/charge id as the webhooks carry it
	RefundID   string `json:"RefundID"`
	DisputeID  string `json:"DisputeID"`

	Gross    int64          `json:"Gross"`
	Fee      int64          `json:"Fee"`
	Net      int64          `json:"Net"`
	Currency money.Currency `json:"Currency"` // settlement currency of Gross, Fee, Net

	OriginalAmount   int64          `json:"OriginalAmount"`   // customer-facing amount, signed like Gross
	OriginalCurrency money.Currency `json:"OriginalCurrency"` // customer-facing currency
	ExchangeRate     string         `json:"ExchangeRate"`     // exact decimal text; "" when none published

	PayoutID    string    `json:"PayoutID"`    // payout (Stripe, Square) or batch (Adyen) the line was paid out in
	OccurredAt  time.Time `json:"OccurredAt"`  // when the provider booked the line (UTC)
	AvailableOn time.Time `json:"AvailableOn"` // when its funds became available; zero if not reported

	// Key is set by importers when LineID alone does not identify the line
	// (Adyen lines have no id: batch, type and references; a PayPal
	// transaction id is not unique across event codes). DedupKey uses Key
	// when set, else LineID.
	Key string `json:"Key"`

	// NoWebhook says the provider sends no webhook for this line's fact
	// (payouts of Adyen, PayPal and Square: their webhook adapters carry
	// none), so recording it from the line opens no missing_webhook.
	NoWebhook bool `json:"NoWebhook"`

	// BankDebit marks a payout line of positive Gross that is a paid
	// payout of negative amount (Square's PAID payout of −3.55: Square
	// debited the seller's bank), not a failed payout coming back. Absent
	// from lines stored before it existed, which keep their meaning.
	BankDebit bool `json:"BankDebit,omitempty"`

	// PayoutTraceID and PayoutDescriptor, on a payout line, are what a
	// bank statement line may name the payout by (Stripe's expanded
	// payout trace_id.value and statement_descriptor: delivery.Fact's
	// TraceID and Descriptor). Not money facts: not hashed.
	PayoutTraceID    string `json:"PayoutTraceID,omitempty"`
	PayoutDescriptor string `json:"PayoutDescriptor,omitempty"`

	// CumulativeRefund marks a refund line of a provider whose
	// notifications report a trade's refunds by its refunded total (Alipay's
	// refund_fee), not by each refund's amount: the line's own amount then
	// joins that total (domain/payment cumulative.go) instead of being
	// compared with a notification's amount. Absent from lines stored before
	// it existed.
	CumulativeRefund bool `json:"CumulativeRefund,omitempty"`

	// Counterpart, on an adjustment line, names the account its net moves
	// against the provider balance (CounterpartReserve, CounterpartBank);
	// "" for an adjustment that moves nothing the ledger books (Adyen's
	// Balancetransfer moves the balance between batches). Absent from lines
	// stored before it existed, which keep their meaning (posting nothing).
	Counterpart string `json:"Counterpart,omitempty"`

	// Discount, on a charge or refund line, is the merchant-funded coupon
	// the provider never paid into the balance: on a charge, the part of
	// the order amount the merchant funded (Alipay 订单金额 − 商家实收,
	// WeChat Pay 订单金额 − 应结订单金额: "应结订单金额 = 订单总金额 −
	// 免充值券金额"); on a refund, the coupon money returned with it, which
	// leaves no balance either (Alipay 商家优惠 on a 退款 row, WeChat Pay
	// 申请退款金额 − 退款金额). OriginalAmount is then the order's (the
	// refund's) full amount and Gross what moved the balance:
	// |OriginalAmount| = |Gross| + Discount, in one currency. Absent from
	// lines stored before it existed.
	Discount int64 `json:"Discount,omitempty"`

	// Reversal, on an adjustment line, names the fact the provider undid
	// and the line reports the money of (ReversalRefund, ReversalCapture);
	// "" for none. Absent from lines stored before it existed, which keep
	// their meaning (posting nothing).
	Reversal string `json:"Reversal,omitempty"`
	// MerchantRef is the merchant's own id of the payment the line names
	// (Alipay's and WeChat Pay's 商户订单号, out_trade_no), when the report
	// has it: a reference the delivery carries (delivery.Event.References)
	// so that an expected payment registered under it finds a capture first
	// told by the bill. Not a fact: outside FactsHash.
	MerchantRef string `json:"MerchantRef,omitempty"`
}

// Reversals (Line.Reversal). Stored names: never change one.
const (
	// ReversalRefund: a refund that failed after it was paid out and came
	// back into the balance (Stripe refund_failure, Adyen
	// RefundedReversed): RefundID names it, positive gross.
	ReversalRefund = "refund"
	// ReversalCapture: a captured charge that failed after it was booked
	// and left the balance (Stripe charge_failure): CaptureID names it,
	// negative gross.
	ReversalCapture = "capture"
)

// BusinessID is the id of the business fact the line reports, as the
// webhooks name it: the capture for a charge, the refund, the dispute; the
// payout for a payout line; "" for kinds that report no webhook fact.
func (l Line) BusinessID() string {
	switch l.Kind {
	case KindCharge:
		return l.CaptureID
	case KindRefund:
		return l.RefundID
	case KindDispute, KindDisputeReversal:
		return l.DisputeID
	case KindPayout:
		return l.PayoutID
	}
	return ""
}

// DedupKey is the line's inbox key: "settle:" + its own id, so that the same
// line imported twice, from an overlapping file, or from another format of
// the same provider (Stripe's report CSV and its Balance Transactions API
// both name the line txn_…) is one delivery. It never collides with a
// webhook's key (event ids and Adyen's "psp:code:success" have no such
// prefix). A key longer than MaxIDBytes is replaced by its SHA-256.
func (l Line) DedupKey() string {
	id := l.Key
	if id == "" {
		id = l.LineID
	}
	k := "settle:" + id
	if len(k) > MaxIDBytes {
		sum := sha256.Sum256([]byte(id))
		k = "settle:sha256:" + hex.EncodeToString(sum[:])
	}
	return k
}

// FactsHash is the hex SHA-256 of the line's money facts (kind, ids, gross,
// fee, net, currency). It is the delivery's payload hash, so the same line
// seen again with the same facts, from any format, is a plain duplicate, and
// with other facts a conflicting redelivery. Descriptive fields (dates,
// original amount, rate, source type, payout) are left out: formats differ in
// which of them they carry (a Balance Transactions list does not name the
// payout it was filtered by).
func (l Line) FactsHash() string {
	var b strings.Builder
	for _, s := range []string{l.Provider, string(l.Kind), l.PaymentKey, l.CaptureID, l.RefundID, l.DisputeID,
		strconv.FormatInt(l.Gross, 10), strconv.FormatInt(l.Fee, 10), strconv.FormatInt(l.Net, 10),
		string(l.Currency)} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	if l.BankDebit {
		// Only when set: hashes of lines stored before it stay the same.
		b.WriteString("bank_debit")
		b.WriteByte(0)
	}
	if l.Counterpart != "" {
		// Likewise: only when set.
		b.WriteString("counterpart=" + l.Counterpart)
		b.WriteByte(0)
	}
	if l.Discount != 0 {
		// Likewise: only when set.
		b.WriteString("discount=" + strconv.FormatInt(l.Discount, 10))
		b.WriteByte(0)
	}
	if l.Reversal != "" {
		// Likewise: only when set.
		b.WriteString("reversal=" + l.Reversal)
		b.WriteByte(0)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// Errors of Validate; each is wrapped with the detail naming the field.
var (
	ErrInvalidLine   = errors.New("invalid settlement line")
	ErrInvalidAmount = errors.New("invalid settlement amount")
)

// SubChecked returns a − b, or an error if it does not fit in int64.
func SubChecked(a, b int64) (int64, error) {
	d := a - b
	// Overflow iff a and b have different signs and d's sign differs from a's.
	if (a^b) < 0 && (a^d) < 0 {
		return 0, fmt.Errorf("%w: %d − %d overflows", ErrInvalidAmount, a, b)
	}
	return d, nil
}

// AddChecked returns a + b, or an error if it does not fit in int64.
func AddChecked(a, b int64) (int64, error) {
	s := a + b
	// Overflow iff a and b have the same sign and s's sign differs.
	if (a^b) >= 0 && (a^s) < 0 {
		return 0, fmt.Errorf("%w: %d + %d overflows", ErrInvalidAmount, a, b)
	}
	return s, nil
}

// Validate checks what every importer must guarantee: a known provider name
// and kind, ids the database accepts, a canonical ISO 4217 settlement
// currency, amounts within ±MaxAmount, Net = Gross − Fee exactly, an
// original amount signed like Gross, an exact decimal rate, and the ids a
// kind needs (a charge its capture, a refund its refund id, a payout its
// payout id; every line an own id or key).
func (l Line) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidLine, fmt.Sprintf(format, a...))
	}
	if l.Provider == "" {
		return bad("provider is missing")
	}
	switch l.Kind {
	case KindCharge, KindRefund, KindDispute, KindDisputeReversal, KindFee, KindPayout, KindFX, KindAdjustment:
	default:
		return bad("unknown kind %q", l.Kind)
	}
	for _, f := range []struct{ name, v string }{
		{"provider", l.Provider}, {"source type", l.SourceType}, {"line id", l.LineID}, {"key", l.Key},
		{"payment key", l.PaymentKey}, {"capture id", l.CaptureID}, {"refund id", l.RefundID},
		{"dispute id", l.DisputeID}, {"payout id", l.PayoutID},
	} {
		if err := checkID(f.name, f.v); err != nil {
			return err
		}
	}
	if l.LineID == "" && l.Key == "" {
		return bad("line has neither an id nor a key")
	}
	if err := checkCurrency("currency", l.Currency); err != nil {
		return err
	}
	if err := checkCurrency("original currency", l.OriginalCurrency); err != nil {
		return err
	}
	for _, a := range []struct {
		name string
		v    int64
	}{{"gross", l.Gross}, {"fee", l.Fee}, {"net", l.Net}, {"original amount", l.OriginalAmount}} {
		if a.v > MaxAmount || a.v < -MaxAmount {
			return fmt.Errorf("%w: %s %d is beyond ±10^15 minor units", ErrInvalidAmount, a.name, a.v)
		}
	}
	net, err := SubChecked(l.Gross, l.Fee)
	if err != nil {
		return err
	}
	if net != l.Net {
		return fmt.Errorf("%w: net %s is not gross %s − fee %s", ErrInvalidAmount,
			money.FormatMinor(l.Net, l.Currency), money.FormatMinor(l.Gross, l.Currency), money.FormatMinor(l.Fee, l.Currency))
	}
	if (l.OriginalAmount > 0 && l.Gross < 0) || (l.OriginalAmount < 0 && l.Gross > 0) {
		return fmt.Errorf("%w: original amount %d and gross %d have opposite signs", ErrInvalidAmount, l.OriginalAmount, l.Gross)
	}
	if err := l.validateDiscount(); err != nil {
		return err
	}
	if l.OriginalCurrency == l.Currency && l.Discount == 0 && l.OriginalAmount != l.Gross {
		return fmt.Errorf("%w: original amount %d differs from gross %d in the same currency %s",
			ErrInvalidAmount, l.OriginalAmount, l.Gross, l.Currency)
	}
	if l.ExchangeRate != "" && !IsDecimal(l.ExchangeRate) {
		return bad("exchange rate %q is not a plain positive decimal", l.ExchangeRate)
	}
	switch l.Kind {
	case KindCharge, KindRefund, KindDispute, KindDisputeReversal:
		if l.PaymentKey == "" {
			return bad("%s line has no payment id", l.Kind)
		}
	}
	switch {
	case l.Kind == KindCharge && l.CaptureID == "":
		return bad("charge line has no capture id")
	case l.Kind == KindRefund && l.RefundID == "":
		return bad("refund line has no refund id")
	case l.BankDebit && (l.Kind != KindPayout || l.Gross <= 0):
		return bad("a bank debit is a payout line of positive gross")
	case l.Counterpart != "" && l.Kind != KindAdjustment:
		return bad("only an adjustment line has a counterpart")
	case l.Counterpart != "" && l.Counterpart != CounterpartReserve && l.Counterpart != CounterpartBank:
		return bad("unknown counterpart %q", l.Counterpart)
	case l.Kind == KindPayout && l.PayoutID == "":
		return bad("payout line has no payout id")
	case l.Reversal != "" && l.Kind != KindAdjustment:
		return bad("only an adjustment line reverses a fact")
	case l.Reversal == ReversalRefund && (l.RefundID == "" || l.PaymentKey == ""):
		return bad("a refund reversal line names no refund and payment")
	case l.Reversal == ReversalCapture && (l.CaptureID == "" || l.PaymentKey == ""):
		return bad("a capture reversal line names no capture and payment")
	case l.Reversal != "" && l.Reversal != ReversalRefund && l.Reversal != ReversalCapture:
		return bad("unknown reversal %q", l.Reversal)
	}
	if l.OccurredAt.IsZero() {
		return bad("line has no date")
	}
	return nil
}

// validateDiscount: a coupon is part of a charge's or refund's amount, in
// the currency it was charged in: |OriginalAmount| = |Gross| + Discount.
func (l Line) validateDiscount() error {
	switch {
	case l.Discount == 0:
		return nil
	case l.Discount < 0 || l.Discount > MaxAmount:
		return fmt.Errorf("%w: discount %d is not within 0 and 10^15 minor units", ErrInvalidAmount, l.Discount)
	case l.Kind != KindCharge && l.Kind != KindRefund:
		return fmt.Errorf("%w: a %s line carries a discount; only charge and refund lines do", ErrInvalidLine, l.Kind)
	case l.OriginalCurrency != l.Currency:
		return fmt.Errorf("%w: a discount on a line converted from %s to %s", ErrInvalidLine, l.OriginalCurrency, l.Currency)
	case abs(l.OriginalAmount) != abs(l.Gross)+l.Discount:
		return fmt.Errorf("%w: original amount %d is not gross %d and discount %d", ErrInvalidAmount, l.OriginalAmount, l.Gross, l.Discount)
	}
	return nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func checkCurrency(field string, c money.Currency) error {
	if c == "" {
		return fmt.Errorf("%w: %s is missing", ErrInvalidLine, field)
	}
	p, err := money.ParseCurrency(string(c))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidLine, field, err)
	}
	if p != c {
		return fmt.Errorf("%w: %s %q is not upper case", ErrInvalidLine, field, c)
	}
	return nil
}

// checkID mirrors delivery's rule: at most MaxIDBytes of printable UTF-8.
func checkID(field, s string) error {
	if len(s) > MaxIDBytes {
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalidLine, field, len(s), MaxIDBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidLine, field)
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f {
			return fmt.Errorf("%w: %s holds control character 0x%02x", ErrInvalidLine, field, b)
		}
	}
	return nil
}

// IsDecimal reports whether s is a plain non-negative decimal: digits,
// optionally one '.' followed by digits ("1", "0.593846153846154").
func IsDecimal(s string) bool {
	i, f, dot := strings.Cut(s, ".")
	if i == "" || (dot && f == "") {
		return false
	}
	for _, part := range []string{i, f} {
		for j := 0; j < len(part); j++ {
			if part[j] < '0' || part[j] > '9' {
				return false
			}
		}
	}
	return len(s) <= 64
}

// Counted is one line as its payout counts it: the line's dedup key and its
// net (settlement currency). A payout is proven when the nets of its lines
// (the payout line itself excluded) sum to its amount.
//
// Its JSON names are stored names, as Line's: a payout-lines delivery keeps
// its lines in them in the inbox.
type Counted struct {
	Key string `json:"Key"`
	Net int64  `json:"Net"`
}

// MaxCountedPerDelivery bounds the lines one payout-lines delivery carries,
// so that its event stays small whatever the payout's size.
const MaxCountedPerDelivery = 1000
