package payment

// ReconKinds lists every reconciliation item kind the aggregate can open, so
// that readers can tell a misspelt filter from an empty result.
func ReconKinds() []string {
	return append([]string{
		ReconRefundBeforePayment,
		ReconOverRefund,
		ReconConflictingRedelivery,
		ReconCurrencyMismatch,
		ReconAmountMismatch,
		ReconUnknownRefundFailed,
		ReconDisputeOutcomeConflict,
		ReconDisputeBeforePayment,
		ReconOverReversal,
	}, SettlementReconKinds()...) // settle_events.go
}
