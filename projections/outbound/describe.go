package outbound

// descriptions says what each public type means to a consumer
// (GET /v1/events/types, docs/events.md).
var descriptions = map[string]string{
	PaymentAuthorized:      "Funds were reserved on the customer's instrument; nothing is captured yet.",
	PaymentCaptured:        "Money was captured: the event a shop ships on. `fee` is the provider's fee (0 when not known yet; `payment.fee_recorded` follows).",
	PaymentFeeRecorded:     "The provider's fee of a capture recorded without one became known; `amount` is the fee.",
	PaymentCaptureReduced:  "A capture recorded at its authorization (a settlement line reports the full authorized amount) is reduced by `amount`, the uncaptured part a partial capture reversal line reversed: the payment's captured amount is now that much less.",
	PaymentFailed:          "The payment attempt failed; `amount` is what it was for, when the provider reported it (nothing is posted).",
	PaymentCanceled:        "The authorization was voided.",
	RefundPending:          "A refund arrived before any capture of its payment; it succeeds (`refund.succeeded`, `was_pending`) once a capture arrives. With `moved_to`, as `refund.succeeded`'s.",
	RefundSucceeded:        "A refund reached the ledger: the money goes back to the customer. With `moved_to` (Alipay only), `amount` is negative: that part of this refund belonged to the earlier refund `moved_to`, whose notification (the trade's refunded total at its own time) arrived after this one's; it is taken off this refund at this refund's time, and a `refund.succeeded` of `moved_to` at its own time books it.",
	RefundFailed:           "A refund failed after all; with `was_pending` it had never posted.",
	DisputeOpened:          "A chargeback: the provider withdrew the disputed amount.",
	DisputeInquiry:         "A dispute reported without funds withdrawn (an inquiry, a warning).",
	DisputeFundsWithdrawn:  "The provider withdrew the amount of a dispute recorded earlier without funds.",
	DisputeFundsReinstated: "The provider gave a withdrawn dispute amount back.",
	DisputePending:         "A dispute fact reported before the payment had any capture; `fact` says which. It takes effect once a capture arrives.",
	DisputeWon:             "The dispute closed in the merchant's favour; with `no_funds` nothing had been held.",
	DisputeLost:            "The dispute is lost (final); with `reverses_win` it had been reported won before.",
	PayoutPaid:             "The provider paid the balance out to the bank.",
	PayoutFailed:           "A payout failed or was canceled; with `was_paid` the bank returned money recorded paid.",
	PayoutLinesCounted:     "Settlement lines a report listed for a payout (their keys and nets), so that the payout can be proven by its lines.",
	SettlementLine:         "One settlement-report line as the provider booked it: `amount` is the gross, with `fee` and `net`. An adjustment line whose net moved between the provider balance and a reserve or the bank names that account in `counterpart` (`reserve`, `bank`).",
	SettlementFee:          "A fee only a settlement report knew (positive charged, negative returned).",
	SettlementConversion:   "A currency conversion a settlement line reports: `amount` in the settlement currency, `original_amount` in the payment's.",
	ReconciliationOpened:   "A reconciliation item opened for a human or a later fact (`kind` as in docs/reference.md).",
	ReconciliationCleared:  "A reconciliation item cleared by the facts catching up.",
	ReconciliationResolved: "An operator marked a reconciliation item handled, with a note.",
	ReconciliationReopened: "An operator reopened a resolved reconciliation item, with a note.",
	PeriodClosed:           "An accounting period was closed: its trial balance is frozen.",
	PeriodReopened:         "A closed accounting period was reopened, with a reason.",
}
