package square

// Payouts API: the ListPayoutEntries response (GET /v2/payouts/{payout_id}/
// payout-entries), {"payout_entries":[…],"cursor":…}, with the Payout object
// (GET /v2/payouts/{id}) under "payout" when available. "The total amount of
// the payout will equal the sum of the payout entries for a batch payout"
// [developer.squareup.com/reference/square/objects/PayoutEntry].
//
// Units and signs: Money is {"amount": integer minor units, "currency"};
// amounts are signed ("Monetary amounts can be positive or negative"): the
// API's own example has a CHARGE of gross 100, fee 19, net 81 and a REFUND of
// gross −50, fee −2 (the fee share returned), net −48. That is the
// settlement.Line convention (net = gross − fee) as it stands. The API
// reference examples also write a "currency_code" member; the schema field
// is "currency", read first, "currency_code" only when it is absent.
//
// Ids, matched to this package's webhook normalizer (square.go):
//   - CHARGE: CaptureID = PaymentKey = type_charge_details.payment_id, the
//     payment id that payment.created/updated use as business id and key.
//   - REFUND: RefundID = type_refund_details.refund_id (refund.* id),
//     PaymentKey = CaptureID = .payment_id.
//   - DISPUTE, OPEN_DISPUTE: DisputeID = .dispute_id (dispute.* id),
//     PaymentKey = .payment_id. Money out is the dispute; money back its
//     reversal.
//   - FEE and the other fee types: a fee, with its payment when named.
//   - PayoutID = payout_id on every entry; the "payout" object becomes a
//     payout line of its own (LineID = the payout id), when SENT or PAID.
//     Square's payout webhooks are not mapped by the adapter (NoWebhook).
//
// Totals: a ListPayoutEntries response has no summary of its own: no count
// or total of the entries, only the page's entries and a cursor
// (developer.squareup.com/reference/square/payouts-api/list-payout-entries;
// PayoutEntry, Payout objects). The one total is the Payout's amount_money,
// "the sum of the payout entries for a batch payout" [PayoutEntry]: it is the
// payout's own fact, not a summary row, and the payout reconciliation checks
// it against the entries (payout_mismatch when they disagree, across pages
// and files), so a file is not refused for it: its entries may come in
// several pages (limit 100), in other files. Nothing else is there to check.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

type squareMoney struct {
	Amount       *json.Number `json:"amount"`
	Currency     string       `json:"currency"`
	CurrencyCode string       `json:"currency_code"`
}

type entryDetails struct {
	PaymentID string `json:"payment_id"`
	RefundID  string `json:"refund_id"`
	DisputeID string `json:"dispute_id"`
}

type payoutEntry struct {
	ID          string       `json:"id"`
	PayoutID    string       `json:"payout_id"`
	EffectiveAt string       `json:"effective_at"`
	Type        string       `json:"type"`
	Gross       *squareMoney `json:"gross_amount_money"`
	Fee         *squareMoney `json:"fee_amount_money"`
	Net         *squareMoney `json:"net_amount_money"`
	// Every type_<x>_details object, by member name.
	Details map[string]json.RawMessage `json:"-"`
}

type payoutObject struct {
	ID          string       `json:"id"`
	Status      string       `json:"status"`
	CreatedAt   string       `json:"created_at"`
	ArrivalDate string       `json:"arrival_date"`
	Amount      *squareMoney `json:"amount_money"`
}

var _ report.Parser = ParseSettlement

// ParseSettlement streams a ListPayoutEntries response, one entry at a time.
func ParseSettlement(r io.Reader, opt report.Options, fn report.Func) error {
	return report.JSONWalk{
		Lists: map[string]func(json.RawMessage, int, int) error{
			"payout_entries": func(raw json.RawMessage, i, line int) error {
				l, err := ParsePayoutEntry(raw, opt)
				if err != nil {
					return at(err, line, fmt.Sprintf("payout_entries[%d]", i))
				}
				return fn(report.Record{Line: l, Raw: raw, Pos: line})
			},
		},
		Other: func(name string, raw json.RawMessage, line int) error {
			if name != "payout" || string(raw) == "null" {
				return nil
			}
			l, ok, err := parsePayout(raw)
			if err != nil {
				return at(err, line, "payout")
			}
			if !ok {
				return nil
			}
			return fn(report.Record{Line: l, Raw: raw, Pos: line})
		},
	}.Walk(r)
}

func at(err error, line int, path string) error {
	var pe *report.ParseError
	if errors.As(err, &pe) {
		pe.Line = line
		if pe.Column == "" {
			pe.Column = path
		} else {
			pe.Column = path + "." + pe.Column
		}
		return pe
	}
	return &report.ParseError{Line: line, Column: path, Err: err}
}

func colErr(col string, err error) error { return &report.ParseError{Column: col, Err: err} }

// amount reads a Money member: integer minor units, signed.
func (m *squareMoney) read(col string) (int64, money.Currency, error) {
	if m == nil || m.Amount == nil {
		return 0, "", colErr(col+".amount", errors.New("missing"))
	}
	c := m.Currency
	if c == "" {
		c = m.CurrencyCode
	}
	cur, err := report.Currency(c)
	if err != nil {
		return 0, "", colErr(col+".currency", err)
	}
	v, err := strconv.ParseInt(string(*m.Amount), 10, 64)
	if err != nil {
		return 0, "", colErr(col+".amount", fmt.Errorf("%w: %s is not an integer amount", money.ErrInvalidAmount, *m.Amount))
	}
	if v > settlement.MaxAmount || v < -settlement.MaxAmount {
		return 0, "", colErr(col+".amount", fmt.Errorf("%w: %d is beyond 10^15 minor units", money.ErrInvalidAmount, v))
	}
	return v, cur, nil
}

// ParsePayoutEntry maps one PayoutEntry object to a line. Errors are
// *report.ParseError naming the member inside the entry.
func ParsePayoutEntry(raw []byte, opt report.Options) (settlement.Line, error) {
	var e payoutEntry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		return settlement.Line{}, colErr("", fmt.Errorf("not a payout entry: %v", err))
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return settlement.Line{}, colErr("", err)
	}
	if e.ID == "" {
		return settlement.Line{}, colErr("id", errors.New("missing"))
	}
	l := settlement.Line{Provider: Name, LineID: e.ID, SourceType: e.Type, PayoutID: e.PayoutID}
	if l.PayoutID == "" {
		l.PayoutID = opt.PayoutID
	}
	if err := entryAmounts(&e, &l); err != nil {
		return l, err
	}
	var err error
	if l.OccurredAt, err = time.Parse(time.RFC3339, e.EffectiveAt); err != nil {
		return l, colErr("effective_at", fmt.Errorf("%q is not RFC 3339", e.EffectiveAt))
	}
	l.OccurredAt = l.OccurredAt.UTC()
	if err := classifyEntry(all, &l); err != nil {
		return l, err
	}
	if err := l.Validate(); err != nil {
		col := ""
		if errors.Is(err, settlement.ErrInvalidAmount) {
			col = "net_amount_money"
		}
		return l, colErr(col, err)
	}
	return l, nil
}

// entryAmounts reads the entry's gross, fee and net (the gross less the
// fee when the net is missing), all in the gross currency.
func entryAmounts(e *payoutEntry, l *settlement.Line) error {
	var err error
	var gc, fc, nc money.Currency
	if l.Gross, gc, err = e.Gross.read("gross_amount_money"); err != nil {
		return err
	}
	if e.Fee != nil {
		if l.Fee, fc, err = e.Fee.read("fee_amount_money"); err != nil {
			return err
		}
	}
	if e.Net != nil {
		if l.Net, nc, err = e.Net.read("net_amount_money"); err != nil {
			return err
		}
	} else if l.Net, err = settlement.SubChecked(l.Gross, l.Fee); err != nil {
		return colErr("net_amount_money", err)
	}
	for _, c := range []struct {
		col string
		cur money.Currency
	}{{"fee_amount_money.currency", fc}, {"net_amount_money.currency", nc}} {
		if c.cur != "" && c.cur != gc {
			return colErr(c.col, fmt.Errorf("%s differs from the gross currency %s", c.cur, gc))
		}
	}
	l.Currency, l.OriginalCurrency, l.OriginalAmount = gc, gc, l.Gross
	return nil
}

// classifyEntry gives l its kind from the entry type (l.SourceType), and
// the payment and the capture, refund or dispute its details member
// (among all of the entry's members) names.
func classifyEntry(all map[string]json.RawMessage, l *settlement.Line) error {
	details := func(member string) (entryDetails, error) {
		var d entryDetails
		raw, ok := all[member]
		if !ok || string(raw) == "null" {
			return d, colErr(member, errors.New("missing"))
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return d, colErr(member, err)
		}
		return d, nil
	}
	typ := strings.ToUpper(l.SourceType)
	switch typ {
	case "CHARGE":
		d, err := details("type_charge_details")
		if err != nil {
			return err
		}
		if d.PaymentID == "" {
			return colErr("type_charge_details.payment_id", errors.New("missing"))
		}
		l.Kind, l.PaymentKey, l.CaptureID = settlement.KindCharge, d.PaymentID, d.PaymentID
	case "REFUND":
		d, err := details("type_refund_details")
		if err != nil {
			return err
		}
		if d.PaymentID == "" || d.RefundID == "" {
			return colErr("type_refund_details", errors.New("needs payment_id and refund_id"))
		}
		l.Kind, l.PaymentKey, l.CaptureID, l.RefundID = settlement.KindRefund, d.PaymentID, d.PaymentID, d.RefundID
	case "DISPUTE", "OPEN_DISPUTE":
		member := "type_dispute_details"
		if typ == "OPEN_DISPUTE" {
			member = "type_open_dispute_details"
		}
		d, err := details(member)
		if err != nil {
			return err
		}
		if d.PaymentID == "" {
			return colErr(member+".payment_id", errors.New("missing"))
		}
		l.Kind, l.PaymentKey, l.CaptureID, l.DisputeID = settlement.KindDispute, d.PaymentID, d.PaymentID, d.DisputeID
		if l.Gross > 0 {
			l.Kind = settlement.KindDisputeReversal
		}
	case "FEE", "TAX_ON_FEE", "DEPOSIT_FEE", "DEPOSIT_FEE_REVERSED", "THIRD_PARTY_FEE", "THIRD_PARTY_FEE_REFUND",
		"PAID_SERVICE_FEE", "PAID_SERVICE_FEE_REFUND", "SUBSCRIPTION_FEE", "SUBSCRIPTION_FEE_REFUND",
		"SUBSCRIPTION_FEE_PAID_REFUND":
		l.Kind = settlement.KindFee
		member := "type_" + strings.ToLower(typ) + "_details"
		if raw, ok := all[member]; ok && string(raw) != "null" {
			var d entryDetails
			if err := json.Unmarshal(raw, &d); err != nil {
				return colErr(member, err)
			}
			l.PaymentKey = d.PaymentID
		}
	case "RESERVE_HOLD", "RESERVE_RELEASE", "HOLD_ADJUSTMENT", "RELEASE_ADJUSTMENT":
		// "Fees paid for funding risk reserve", "fees released from risk
		// reserve", "an adjustment made by Square related to holding [or
		// releasing] a payment" (ActivityType, developer.squareup.com/
		// reference/square/enums/ActivityType): the seller's money held
		// apart from the payout (negative net) or released into it:
		// provider:square:reserve.
		l.Kind, l.Counterpart = settlement.KindAdjustment, settlement.CounterpartReserve
	default:
		// ADJUSTMENT ("a manual adjustment applied to the seller's account
		// by Square"), PAYOUT (a SIMPLE payout inside this batch),
		// RETURNED_PAYOUT, SQUARE_CAPITAL_*…: recorded and counted in the
		// payout, posting nothing: they name no account the money went to.
		l.Kind = settlement.KindAdjustment
	}
	return nil
}

// parsePayout maps the Payout object to the payout's own line (money out of
// the balance: −amount_money). A payout not SENT or PAID moved nothing yet
// (ok false). amount_money may be negative (a debit from the seller's bank):
// the line then brings money into the balance, and is a paid payout that
// moves money the other way (BankDebit), not a failed payout.
func parsePayout(raw []byte) (settlement.Line, bool, error) {
	var p payoutObject
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return settlement.Line{}, false, colErr("", fmt.Errorf("not a payout: %v", err))
	}
	if p.ID == "" {
		return settlement.Line{}, false, colErr("id", errors.New("missing"))
	}
	switch strings.ToUpper(p.Status) {
	case "SENT", "PAID":
	default:
		return settlement.Line{}, false, nil
	}
	amount, cur, err := p.Amount.read("amount_money")
	if err != nil {
		return settlement.Line{}, false, err
	}
	l := settlement.Line{Provider: Name, Kind: settlement.KindPayout, SourceType: "PAYOUT:" + strings.ToUpper(p.Status),
		LineID: p.ID, PayoutID: p.ID, Gross: -amount, Net: -amount, Currency: cur, OriginalAmount: -amount,
		OriginalCurrency: cur, NoWebhook: true, BankDebit: amount < 0}
	if l.OccurredAt, err = time.Parse(time.RFC3339, p.CreatedAt); err != nil {
		return l, false, colErr("created_at", fmt.Errorf("%q is not RFC 3339", p.CreatedAt))
	}
	l.OccurredAt = l.OccurredAt.UTC()
	if p.ArrivalDate != "" {
		if l.AvailableOn, err = time.Parse("2006-01-02", p.ArrivalDate); err != nil {
			return l, false, colErr("arrival_date", fmt.Errorf("%q is not YYYY-MM-DD", p.ArrivalDate))
		}
	}
	if err := l.Validate(); err != nil {
		return l, false, colErr("", err)
	}
	return l, true, nil
}
