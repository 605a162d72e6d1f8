package payment

import (
	"time"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// Settlement event types (settle.go decides them). Changing one is a data
// migration.
const (
	// TypeLineSettled records one settlement-report line as the provider
	// booked it: the settlement_lines and payouts read models fold it.
	// Posts nothing by itself, but for an adjustment line whose
	// Counterpart names where its money went (settlePostings).
	TypeLineSettled = "settlement.line_recorded"
	// TypeFeeSettled posts a fee only a report knew (docs/reference.md: "fee F known
	// only from a settlement report").
	TypeFeeSettled = "settlement.fee_posted"
	// TypeConverted posts a conversion between the payment's currency and
	// the settlement currency through fx:trading.
	TypeConverted = "settlement.converted"
	// TypePayoutLinesCounted records lines of a payout a report listed
	// (their keys and nets), in the payout's stream, so that it can tell
	// whether its lines prove it. Posts nothing.
	TypePayoutLinesCounted = "settlement.payout_lines_counted"
	// TypeCaptureReduced reduces a capture recorded at its authorization
	// by the uncaptured part a partial capture reversal line reversed
	// (settle.go settleUncaptured).
	TypeCaptureReduced = "payment.capture_reduced"
)

// Reconciliation kinds from settlement (docs/reference.md).
const (
	// A report line for a fact no webhook delivered: the line's fact is
	// recorded and the item opened; the webhook, if it comes after all,
	// adds nothing twice and clears the item. Key: the business id
	// (capture, refund, dispute, payout id); a dispute's reversal "<id>:reinstated".
	ReconMissingWebhook = "missing_webhook"
	// A capture's fee in the report differs from the webhook's; the first
	// stands. Key: the capture id.
	ReconFeeMismatch = "fee_mismatch"
	// A line's amount or currency differs from the fact the webhook
	// recorded (or the reverse); the first stands. Key: the business id.
	ReconSettlementMismatch = "settlement_mismatch"
	// A capture older than ONCELEDGER_UNSETTLED_AFTER without a settlement
	// line when a later report is imported. Opened by the import wiring,
	// not by Decide (it needs a clock). Key: the capture id.
	ReconUnsettled = "unsettled"
	// A payout whose amount differs from the sum of its lines' nets. Opened
	// in the payout's stream when the lines a report listed for it
	// (delivery.KindPayoutLines) and its amount disagree, cleared when
	// they come to agree. Key: the payout id.
	ReconPayoutMismatch = "payout_mismatch"
)

// SettlementReconKinds lists the reconciliation kinds of settlement.
func SettlementReconKinds() []string {
	return []string{ReconMissingWebhook, ReconUnsettled, ReconFeeMismatch, ReconSettlementMismatch, ReconPayoutMismatch}
}

// LineSettled records one settlement line (see settlement.Line for signs
// and units). It is emitted once per line into the stream the line joins:
// its payment's, or its payout's for lines tied to no payment.
type LineSettled struct {
	Meta
	Line settlement.Line
}

// FeeSettled: a fee the report charged (positive) or returned (negative)
// that no webhook posted: a capture's fee in another currency than the
// payment, a refund's or dispute's fee, a fee line. Currency is the
// settlement currency.
type FeeSettled struct {
	Meta
	LineID   string // the line's DedupKey
	Fee      int64
	Currency money.Currency
}

// Converted: what a settlement line says about a conversion. The original
// leg leaves the provider balance in the original currency (the payment's),
// the settled leg enters it in the settlement currency; each leg goes
// through fx:trading, so each currency balances on its own. Amounts are
// signed like the line's gross (a refund converts back: both negative). A
// line that is one leg of a conversion (PayPal T0200) has only the settled
// leg.
type Converted struct {
	Meta
	LineID           string
	OriginalAmount   int64
	OriginalCurrency money.Currency
	SettledAmount    int64
	SettledCurrency  money.Currency
	ExchangeRate     string // the provider's rate, exact text; "" if none
}

// CaptureReduced: capture CaptureID, recorded at the amount its charge
// line reported (Stripe's charge row is "for the full amount of the
// authorization"), is reduced by Amount (positive, in the payment's
// currency), the uncaptured part line LineID (a partial_capture_reversal,
// docs.stripe.com/reports/reporting-categories) reversed: what the capture
// credited to revenue:sales and debited to the provider balance comes back
// by Amount, so the books hold what the provider captured.
type CaptureReduced struct {
	Meta
	CaptureID string
	Amount    int64
	Currency  money.Currency
	LineID    string // the reversal line's DedupKey
	// Failed: the capture failed after it posted (Stripe charge_failure,
	// settle_reversal.go): its money is taken back, but the capture stays
	// recorded at its amount, so its own reports (the webhook, the charge
	// line and its fee) still match it. Absent from events stored before.
	Failed bool
}

func (CaptureReduced) Type() string { return TypeCaptureReduced }

// PayoutLinesCounted: lines of payout PayoutID not counted before.
type PayoutLinesCounted struct {
	Meta
	PayoutID string
	Currency money.Currency
	Lines    []settlement.Counted
}

func (PayoutLinesCounted) Type() string { return TypePayoutLinesCounted }

func (LineSettled) Type() string { return TypeLineSettled }
func (FeeSettled) Type() string  { return TypeFeeSettled }
func (Converted) Type() string   { return TypeConverted }

// settlePostings are the postings of the settlement events (docs/reference.md's
// chart: a fee known only from a settlement report; a conversion through
// fx:trading). A returned payout line records PayoutFailed (settle_payout.go). nil for every other event.
func settlePostings(e Event) []ledger.Posting {
	p := e.Metadata().Provider
	switch e := e.(type) {
	case LineSettled:
		return adjustmentPostings(p, e.Line)
	case CaptureReduced:
		// The reverse of the capture's revenue and balance lines (postings.go
		// Captured), for the part not captured.
		return lines(e.Currency,
			ledger.RevenueSales, e.Amount,
			ledger.ProviderBalance(p), -e.Amount)
	case FeeSettled:
		return lines(e.Currency,
			ledger.ProviderFees(p), e.Fee,
			ledger.ProviderBalance(p), -e.Fee)
	case Converted:
		var out []ledger.Posting
		if e.OriginalCurrency != "" {
			out = append(out, lines(e.OriginalCurrency,
				FXTrading, e.OriginalAmount,
				ledger.ProviderBalance(p), -e.OriginalAmount)...)
		}
		return append(out, lines(e.SettledCurrency,
			ledger.ProviderBalance(p), e.SettledAmount,
			FXTrading, -e.SettledAmount)...)
	}
	return nil
}

// adjustmentPostings: an adjustment line with a counterpart moves its net
// between the provider balance and that account (docs/reference.md: an
// amount withheld into or released from a reserve; a transfer from the
// merchant's bank into the balance outside a payout). Every other line
// posts nothing by being recorded: its money is posted by the facts it
// reports (settle.go) or by none.
func adjustmentPostings(p string, l settlement.Line) []ledger.Posting {
	if l.Kind != settlement.KindAdjustment {
		return nil
	}
	var counter string
	switch l.Counterpart {
	case settlement.CounterpartReserve:
		counter = ledger.ProviderReserve(p)
	case settlement.CounterpartBank:
		counter = ledger.BankPayouts
	default:
		return nil
	}
	return lines(l.Currency,
		ledger.ProviderBalance(p), l.Net,
		counter, -l.Net)
}

// FXTrading is the conversion account of docs/reference.md's chart.
const FXTrading = "fx:trading"

// settleTime keeps the zero time zero through the codec.
func settleTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err
}
