package payment

// EventTypes is the one list of every stored type of this package's events,
// in no meaningful order. Readers that must handle every type (the outbound
// vocabulary's mapping, the codec's golden files) are checked against it, so
// a new event type added here without its mapping fails their tests.
func EventTypes() []string {
	return []string{
		TypeAuthorized, TypeCaptured, TypeFeeRecorded, TypeFailed, TypeCanceled,
		TypeRefundPending, TypeRefundPosted, TypeRefundReversed,
		TypeDisputeOpened, TypeDisputeWon, TypeDisputeLost, TypeDisputeInquiry,
		TypeDisputeFundsWithdrawn, TypeDisputeFundsReinstated, TypeDisputePending,
		TypePayoutPaid, TypePayoutFailed, TypePayoutTraced,
		TypeFlagged, TypeCleared, TypeResolved, TypeReopened,
		TypeLineSettled, TypeFeeSettled, TypeConverted, TypePayoutLinesCounted, TypeCaptureReduced,
	}
}
