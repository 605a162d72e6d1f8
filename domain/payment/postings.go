package payment

import (
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

// Postings returns the double-entry postings of e per docs/reference.md's chart of
// accounts, with the provider p taken from e's Meta (nil for events that post
// nothing). They sum to zero per currency. Lines of amount zero are left out
// (a capture without fee has no fee line; a capture of zero posts nothing):
// they carry no information and would only clutter the entries table.
func Postings(e Event) []ledger.Posting {
	p := e.Metadata().Provider
	switch e := e.(type) {
	case Captured:
		return lines(e.Currency,
			ledger.ProviderBalance(p), e.Amount-e.Fee-e.Discount,
			ledger.ProviderFees(p), e.Fee,
			ledger.ProviderDiscounts(p), e.Discount,
			ledger.RevenueSales, -e.Amount)
	case FeeRecorded:
		return lines(e.Currency,
			ledger.ProviderFees(p), e.Fee,
			ledger.ProviderBalance(p), -e.Fee)
	case RefundPosted:
		// The coupon part returns to the buyer as the coupon, not from
		// the provider balance (docs/reference.md: "refund R of such a
		// capture, of which C is coupon money returned").
		return lines(e.Currency,
			ledger.RevenueRefunds, e.Amount,
			ledger.ProviderBalance(p), -(e.Amount - e.Discount),
			ledger.ProviderDiscounts(p), -e.Discount)
	case RefundReversed:
		if e.WasPending {
			return nil // it never posted; nothing to undo
		}
		return lines(e.Currency,
			ledger.ProviderBalance(p), e.Amount-e.Discount,
			ledger.ProviderDiscounts(p), e.Discount,
			ledger.RevenueRefunds, -e.Amount)
	case DisputeOpened:
		return lines(e.Currency,
			ledger.DisputeReceivable(p), e.Amount,
			ledger.ProviderBalance(p), -e.Amount)
	case DisputeFundsWithdrawn:
		return lines(e.Currency,
			ledger.DisputeReceivable(p), e.Amount,
			ledger.ProviderBalance(p), -e.Amount)
	case DisputeFundsReinstated:
		return lines(e.Currency,
			ledger.ProviderBalance(p), e.Amount,
			ledger.DisputeReceivable(p), -e.Amount)
	case DisputeWon:
		if e.NoFunds {
			return nil // nothing was held; nothing comes back
		}
		return lines(e.Currency,
			ledger.ProviderBalance(p), e.Amount,
			ledger.DisputeReceivable(p), -e.Amount)
	case DisputeLost:
		if e.ReversesWin {
			// The win had moved the amount from the receivable back to
			// the balance; the loss takes it from the balance.
			return lines(e.Currency,
				ledger.ExpensesDispute, e.Amount,
				ledger.ProviderBalance(p), -e.Amount)
		}
		return lines(e.Currency,
			ledger.ExpensesDispute, e.Amount,
			ledger.DisputeReceivable(p), -e.Amount)
	case PayoutPaid:
		return lines(e.Currency,
			ledger.BankPayouts, e.Amount,
			ledger.ProviderBalance(p), -e.Amount)
	case PayoutFailed:
		if !e.WasPaid {
			return nil // it never posted; nothing to undo
		}
		// docs/reference.md: payout failed / returned P (after paid).
		return lines(e.Currency,
			ledger.ProviderBalance(p), e.Amount,
			ledger.BankPayouts, -e.Amount)
	case Poster: // another aggregate's event (extension.go)
		return e.Postings()
	}
	return settlePostings(e) // settle_events.go
}

// lines builds postings from (account, amount) pairs, dropping zero amounts.
func lines(c money.Currency, pairs ...any) []ledger.Posting {
	var out []ledger.Posting
	for i := 0; i < len(pairs); i += 2 {
		if a := pairs[i+1].(int64); a != 0 {
			out = append(out, ledger.Posting{Account: pairs[i].(string), Currency: c, Amount: a})
		}
	}
	return out
}
