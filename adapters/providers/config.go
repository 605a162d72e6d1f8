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
	// UnknownKey, when set, is told of a delivery naming a signing key that
	// is not configured (WeChat Pay's Wechatpay-Serial), before its
	// signature is checked: anyone can send one, so it is for a metric and
	// a rate-limited warning, never for a label of its own. It is called
	// from concurrent requests.
	UnknownKey func(provider, key string)
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
