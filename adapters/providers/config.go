package providers

import (
	"strings"
	"time"
)

// Settings are the settings every provider's adapter may read beside its
// own configuration: ONCELEDGER_WEBHOOK_TOLERANCE (docs/reference.md).
type Settings struct {
	// Tolerance is the replay window of the signed timestamps.
	Tolerance time.Duration
}

// NonEmpty is a configured list without its blank entries, each trimmed:
// an empty ONCELEDGER_* list, or a trailing comma, configures nothing.
func NonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
