package projections

// SetBatchSize sets a projector's live batch size (tests use small batches
// to get many checkpoints).
func SetBatchSize(p *Projector, n int) { p.batchSize = n }

// HookOnlineCompare is the phase in which a rebuild compares while the live
// projectors run.
const HookOnlineCompare = hookOnlineCompare

// HookIndexes is the phase in which a rebuild builds the indexes of the
// shadows that will replace their live tables.
const HookIndexes = hookIndexes

// WithPhaseHook returns o with a hook the rebuild calls as it enters some
// phases (tests block it there).
func WithPhaseHook(o RebuildOptions, f func(phase string)) RebuildOptions {
	o.phaseHook = f
	return o
}
