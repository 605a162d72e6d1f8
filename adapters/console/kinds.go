package console

import "slices"

// kindHelp is what a reconciliation item's kind means to an accountant and
// what to do about it, in one line each (issue 39: nothing told them).
// docs/accountants.md carries the same table; a test keeps the two and the
// domain's kinds in step.
type kindHelp struct {
	Kind, Means, Do string
}

// kindHelps covers every kind the ledger opens, those of the contract's
// newer sources (provider balances, expected payments, the bank) included.
var kindHelps = []kindHelp{
	{"refund_before_payment", "A refund arrived before the payment it refunds; nothing is posted yet.",
		"Usually wait: the capture's webhook or the next report books both and resolves it. Still open after a report: ask the provider."},
	{"dispute_before_payment", "A dispute arrived before its payment; nothing is posted yet.",
		"As for refund_before_payment: the capture books both."},
	{"over_refund", "Refunds of the payment exceed what was captured.",
		"Check the refunds at the provider; a duplicate or mistaken refund is money to recover."},
	{"over_reversal", "Refunds plus disputes exceed the captured amount (refunds alone do not).",
		"Check whether a refunded payment was also charged back: the provider took the money twice."},
	{"conflicting_redelivery", "The provider sent the same delivery id again with different facts; the first stand.",
		"Compare the two versions (the delivery page shows each field); if the second is right, redrive or adjust."},
	{"currency_mismatch", "A fact names another currency than its payment's.",
		"Look at the payment at the provider; book the difference with an adjustment if the money moved."},
	{"amount_mismatch", "One business id was reported with two amounts (or a capture differs from its expected payment).",
		"Find which amount the provider settled (its report) and adjust to it."},
	{"unknown_refund_failed", "A refund failure names a refund the ledger never saw.",
		"Usually harmless: nothing was posted. Resolve with a note after checking the provider."},
	{"dispute_outcome_conflict", "A dispute was reported both won and lost.",
		"Read the dispute at the provider; the later outcome stands, adjust if the postings differ."},
	{"subscription_disabled", "A push subscription kept failing and was disabled; the merchant's service stopped hearing events.",
		"Fix the receiver, then re-enable or replay the subscription (admin)."},
	{"missing_webhook", "A report line told a fact no webhook delivered; the line's facts are recorded.",
		"Nothing to book: it tells you webhooks are being lost. Check the webhook endpoint's configuration."},
	{"unsettled", "A capture has no settlement line long after it, though a later report arrived.",
		"Ask the provider whether it was paid out; a lost capture is money owed to you."},
	{"fee_mismatch", "The report's fee differs from the fee the webhook told.",
		"The report's fee is booked; check the pricing if it repeats."},
	{"settlement_mismatch", "The report's amounts for a payment differ from the webhook's.",
		"Compare both at the provider; adjust to what was settled."},
	{"payout_mismatch", "A payout's amount differs from the sum of its lines (in its own currency).",
		"Look for a missing report line or a line in another currency; import the missing report."},
	{"balance_mismatch", "A balance the provider or the bank states differs from the ledger's as of the same moment.",
		"Find the fact that is missing or wrong on that day (the provider days page); a late fact resolves it, else resolve with an adjustment."},
	{"payment_overdue", "An expected payment got no capture by its deadline.",
		"Ask the shop whether the order was paid elsewhere; cancel the expectation if it will not be."},
	{"unidentified_deposit", "A bank credit matches no payout; it sits in suspense:bank.",
		"Find its origin (the remittance text); resolve with an adjustment to the right account."},
	{"payout_not_received", "A payout did not reach the bank within the arrival window.",
		"Ask the provider for the payout's trace; check that the statement is imported."},
	{"payout_returned", "The bank returned a payout; the money went back to the provider.",
		"Check the bank details at the provider; it will pay out again."},
	{"statement_gap", "A bank statement in the sequence is missing.",
		"Import the missing statement; the gap resolves when it is."},
}

// helpOf is the help of a kind, and whether there is one.
func helpOf(kind string) (kindHelp, bool) {
	i := slices.IndexFunc(kindHelps, func(h kindHelp) bool { return h.Kind == kind })
	if i < 0 {
		return kindHelp{}, false
	}
	return kindHelps[i], true
}

// legendOf is the help of each kind among kinds, once, in kindHelps' order.
func legendOf(kinds []string) []kindHelp {
	var out []kindHelp
	for _, h := range kindHelps {
		if slices.Contains(kinds, h.Kind) {
			out = append(out, h)
		}
	}
	return out
}
