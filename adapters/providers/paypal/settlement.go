package paypal

// Settlement report (STL-yyyymmdd.NN.009.CSV): PayPal's daily book of the
// balance-affecting transactions of an account [developer.paypal.com/docs/
// reports/sftp-reports/settlement-report]. A multi-record CSV: the first
// field of each row is its record type (RH report header, FH file header, SH
// section header, CH column header, SB section body, SF/SC section footer
// and count, RF/RC report footer and count, FF file footer). CH names the
// columns of the SB rows that follow; columns are found by that header name
// (white space folded: versions spell "Transaction  Debit or Credit" with
// one or two spaces), unknown columns and unknown record types ignored.
//
// Units and signs: "Money amount fields are unsigned, with no currency
// symbol, decimal separator, or other punctuation … 100,00 yen and $100.00
// USD are both represented as 10000": integer minor units of the row's
// currency, unsigned; "Transaction Debit or Credit" (CR/DR) gives the gross
// amount's direction and "Fee Debit or Credit" the fee's. A line's Gross is
// +gross for CR, −gross for DR; its Fee is +fee when the fee is a debit
// (charged), −fee when a credit (returned); Net = Gross − Fee.
//
// Ids, matched to this package's webhook normalizer (paypal.go, which keys
// every stream by the capture id):
//   - T00nn credit rows (payments received, T0006 "PayPal Checkout APIs"):
//     CaptureID = PaymentKey = Transaction ID, the v2 capture id that
//     PAYMENT.CAPTURE.COMPLETED carries as resource.id.
//   - T1107 (refund): RefundID = Transaction ID (PAYMENT.CAPTURE.REFUNDED
//     resource.id); PaymentKey = CaptureID = PayPal Reference ID (the
//     refunded capture, type TXN), as the refund's "up" link names it.
//   - T1106 (reversal), T1201 (chargeback), T1202 (chargeback reversal):
//     PaymentKey = PayPal Reference ID; DisputeID = DisputeID(it), the id
//     the webhooks of both channels give the dispute of that capture
//     ("reversal-" + capture id): the line posts the chargeback (funds
//     withdrawn) or its reversal once, with or without its webhook.
//   - T01nn fees, T02nn conversion legs: PaymentKey = PayPal Reference ID
//     when it names a transaction (TXN), else none.
//   - T04nn withdrawals (the bank payouts): PayoutID = Transaction ID;
//     PayPal sends no payout webhook the adapter maps (NoWebhook).
// A daily report is no payout batch: other rows have no PayoutID.
//
// A file is checked against its own structure and totals (stlFile,
// settlement_footer.go, which says where the footer layout comes from):
// SB rows sit in a section (SH … SC), and the file ends with its file
// footer FF, nothing after it. A file cut short (a transfer that stopped, a
// disk that filled) lacks its FF and imports nothing, the error naming its
// last line. Each section's count (SC) and per-currency footer totals (SF:
// gross credits and debits, fee credits and debits) must agree with its SB
// rows, and FF with the file's; a file that holds the whole report checks
// the report footer (RF) and count (RC) too. A report split over several
// files (over a million records) has FH … FF in each, so each file is
// checked on its own; RF and RC, in its last file, span the files and are
// not compared there. A file that disagrees imports nothing, the error
// naming the footer line and both figures.

import (
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

var stlColumns = []string{
	"Transaction ID", "Invoice ID", "PayPal Reference ID", "PayPal Reference ID Type", "Transaction Event Code",
	"Transaction Initiation Date", "Transaction Completion Date", "Transaction Debit or Credit",
	"Gross Transaction Amount", "Gross Transaction Currency", "Fee Debit or Credit", "Fee Amount", "Fee Currency",
	"Custom Field",
}

var _ report.Parser = ParseSettlement

// ParseSettlement streams a Settlement report (STL). The SB rows of each
// section need a CH row before them; required SB columns: Transaction ID,
// Transaction Event Code, Transaction Debit or Credit, Gross Transaction
// Amount, Gross Transaction Currency, and a date.
func ParseSettlement(r io.Reader, opt report.Options, fn report.Func) error {
	c := report.NewCSV(r)
	header := false
	var file stlFile
	for {
		if err := c.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				if err := file.end(); err != nil {
					return err
				}
				return file.stated(opt.Stated) // settlement_footer.go
			}
			return err
		}
		typ := strings.TrimSpace(strings.TrimPrefix(c.Field(0), "\uFEFF"))
		if err := file.record(typ, c.Line(), c); err != nil {
			return err
		}
		switch typ {
		case "CH":
			if err := c.SetHeader(1); err != nil {
				return err
			}
			if err := c.Require("Transaction ID", "Transaction Event Code", "Transaction Debit or Credit",
				"Gross Transaction Amount", "Gross Transaction Currency"); err != nil {
				var pe *report.ParseError
				if errors.As(err, &pe) {
					pe.Line = c.Line()
				}
				return err
			}
			header = true
		case "SB":
			if !header {
				return &report.ParseError{Line: c.Line(), Err: errors.New("an SB row before any CH column header")}
			}
			l, err := stlLine(c, opt)
			if err != nil {
				return err
			}
			if err := file.body(l, c.Line()); err != nil {
				return err
			}
			if err := fn(report.Record{Line: l, Raw: c.Raw(stlColumns...), Pos: c.Line()}); err != nil {
				return err
			}
		case "":
			if c.Len() > 1 {
				return &report.ParseError{Line: c.Line(), Err: errors.New("a row without a record type")}
			}
		default:
			// RH, FH, SH, SF, SC, RF, RC, FF and record types of later
			// versions: nothing a line needs.
		}
	}
}

// direction reads a CR/DR column as +1/−1 (0 for empty).
func direction(c *report.CSV, col string) (int64, error) {
	switch strings.ToUpper(strings.TrimSpace(c.Get(col))) {
	case "CR":
		return 1, nil
	case "DR":
		return -1, nil
	case "":
		return 0, nil
	}
	return 0, c.Err(col, fmt.Errorf("%q is neither CR nor DR", c.Get(col)))
}

// minor reads an unsigned integer minor-unit amount.
func minor(c *report.CSV, col string) (int64, error) {
	s := strings.TrimSpace(c.Get(col))
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || strings.HasPrefix(s, "+") {
		return 0, c.Err(col, fmt.Errorf("%w: %q is not an unsigned whole number of minor units", money.ErrInvalidAmount, s))
	}
	if v > settlement.MaxAmount {
		return 0, c.Err(col, fmt.Errorf("%w: %q is beyond 10^15 minor units", money.ErrInvalidAmount, s))
	}
	return v, nil
}

func stlLine(c *report.CSV, opt report.Options) (settlement.Line, error) {
	id := strings.TrimSpace(c.Get("Transaction ID"))
	code := strings.ToUpper(strings.TrimSpace(c.Get("Transaction Event Code")))
	l := settlement.Line{Provider: Name, LineID: id, SourceType: code}
	if id == "" {
		return l, c.Err("Transaction ID", errors.New("empty"))
	}
	if len(code) != 5 || code[0] != 'T' {
		return l, c.Err("Transaction Event Code", fmt.Errorf("%q is not a T-code (T0006)", code))
	}
	cur, err := report.Currency(c.Get("Gross Transaction Currency"))
	if err != nil {
		return l, c.Err("Gross Transaction Currency", err)
	}
	l.Currency, l.OriginalCurrency = cur, cur
	dir, err := direction(c, "Transaction Debit or Credit")
	if err != nil {
		return l, err
	}
	if dir == 0 {
		return l, c.Err("Transaction Debit or Credit", errors.New("empty"))
	}
	gross, err := minor(c, "Gross Transaction Amount")
	if err != nil {
		return l, err
	}
	fee, err := minor(c, "Fee Amount")
	if err != nil {
		return l, err
	}
	feeDir, err := direction(c, "Fee Debit or Credit")
	if err != nil {
		return l, err
	}
	if fee != 0 {
		if feeDir == 0 {
			return l, c.Err("Fee Debit or Credit", errors.New("a fee without CR or DR"))
		}
		if fc := strings.TrimSpace(c.Get("Fee Currency")); fc != "" {
			fcur, err := report.Currency(fc)
			if err != nil {
				return l, c.Err("Fee Currency", err)
			}
			if fcur != cur {
				return l, c.Err("Fee Currency", fmt.Errorf("fee in %s, gross in %s", fcur, cur))
			}
		}
	}
	l.Gross = dir * gross
	l.Fee = -feeDir * fee
	l.OriginalAmount = l.Gross
	if l.Net, err = settlement.SubChecked(l.Gross, l.Fee); err != nil {
		return l, c.Err("Fee Amount", err)
	}
	dateCol := "Transaction Completion Date"
	if strings.TrimSpace(c.Get(dateCol)) == "" {
		dateCol = "Transaction Initiation Date"
	}
	if l.OccurredAt, err = stlTime(c.Get(dateCol)); err != nil {
		return l, c.Err(dateCol, err)
	}
	l.Key = id + ":" + code + ":" + string(cur)

	ref := strings.TrimSpace(c.Get("PayPal Reference ID"))
	refType := strings.ToUpper(strings.TrimSpace(c.Get("PayPal Reference ID Type")))
	txnRef := ""
	if ref != "" && (refType == "TXN" || refType == "") {
		txnRef = ref
	}
	needRef := func(kind settlement.Kind) error {
		if txnRef == "" {
			return c.Err("PayPal Reference ID", fmt.Errorf("a %s row needs the transaction it refers to", code))
		}
		l.Kind, l.PaymentKey, l.CaptureID = kind, txnRef, txnRef
		return nil
	}
	group := code[:3]
	switch {
	case group == "T00" && dir > 0:
		l.Kind, l.PaymentKey, l.CaptureID = settlement.KindCharge, id, id
	case code == "T1107":
		err = needRef(settlement.KindRefund)
		l.RefundID = id
	case code == "T1106", code == "T1201":
		// A chargeback (or payment reversal) takes the disputed money from
		// the balance: the dispute's funds withdrawn, under the id both
		// webhook channels give it (DisputeID: derived from the disputed
		// capture), so the line and a webhook post it once.
		err = needRef(settlement.KindDispute)
		l.DisputeID = DisputeID(txnRef)
	case code == "T1202":
		err = needRef(settlement.KindDisputeReversal)
		l.DisputeID = DisputeID(txnRef)
	case group == "T01", code == "T1108", code == "T1109":
		l.Kind, l.PaymentKey = settlement.KindFee, txnRef
	case group == "T02":
		l.Kind, l.PaymentKey = settlement.KindFX, txnRef
	case group == "T04":
		l.Kind, l.PayoutID, l.NoWebhook = settlement.KindPayout, id, true
	default:
		l.Kind = settlement.KindAdjustment
	}
	if err != nil {
		return l, err
	}
	if err := l.Validate(); err != nil {
		return l, c.Err("", err)
	}
	return l, nil
}

// stlTime reads "yyyy/mm/dd hh:mm:ss ±hhmm".
func stlTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006/01/02 15:04:05 -0700", "2006/01/02 15:04:05 MST", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date-time (yyyy/mm/dd hh:mm:ss ±hhmm)", s)
}
