package projections

// SetBatchSize sets a projector's live batch size (tests use small batches
// to get many checkpoints).
func SetBatchSize(p *Projector, n int) { p.batchSize = n }
