package period

// EventTypes is the one list of every stored type of period events (see
// payment.EventTypes: readers that must map every type are checked against it).
func EventTypes() []string { return []string{TypeClosed, TypeReopened} }
