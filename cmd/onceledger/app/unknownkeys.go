package app

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
)

// UnknownKeys hears of webhooks naming a signing key that is not configured
// (WeChat Pay's Wechatpay-Serial, providers.Settings.UnknownKey): a
// provider rotating its key looks exactly like this until the new one is
// configured, so it must not fail silently. It counts them in
// onceledger_webhook_unknown_key_total{provider} and logs a warning naming
// the key, at most once a minute per provider: anyone can send such a
// delivery (it is refused before its signature is checked), so the key is
// never a label and the log is not the sender's to fill.
type UnknownKeys struct {
	counter *prometheus.CounterVec
	log     *slog.Logger
	every   time.Duration
	now     func() time.Time

	mu         sync.Mutex
	last       map[string]time.Time // provider → last warning
	suppressed map[string]int       // provider → reports since it
}

// unknownKeyWarningEvery is how often a provider's unknown keys are logged.
const unknownKeyWarningEvery = time.Minute

// NewUnknownKeys returns the counter and warning, logging to log.
func NewUnknownKeys(log *slog.Logger) *UnknownKeys {
	if log == nil {
		log = slog.Default()
	}
	return &UnknownKeys{
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_webhook_unknown_key_total",
			Help: "Webhooks refused because they name a signing key (WeChat Pay: Wechatpay-Serial) that is not configured.",
		}, []string{"provider"}),
		log: log, every: unknownKeyWarningEvery, now: time.Now,
		last: map[string]time.Time{}, suppressed: map[string]int{},
	}
}

// Report is providers.Settings.UnknownKey: provider's delivery named key.
// Safe for concurrent use.
func (u *UnknownKeys) Report(provider, key string) {
	u.counter.WithLabelValues(provider).Inc()
	u.mu.Lock()
	now := u.now()
	if last, ok := u.last[provider]; ok && now.Sub(last) < u.every {
		u.suppressed[provider]++
		u.mu.Unlock()
		return
	}
	u.last[provider] = now
	suppressed := u.suppressed[provider]
	u.suppressed[provider] = 0
	u.mu.Unlock()
	u.log.Warn("webhook names a signing key that is not configured: if the provider rotated its key, configure the new one",
		slog.String("provider", provider), slog.String("key", key), slog.String("variable", variableOf(provider)),
		slog.Int("more_since_last_warning", suppressed))
}

// keyVariables are the variables that configure a provider's signing keys,
// for the providers that report unknown ones.
var keyVariables = map[string]string{wechatpay.Name: wechatpay.EnvKeys}

func variableOf(provider string) string { return keyVariables[provider] }

// Collector is the counter, for a metrics registry.
func (u *UnknownKeys) Collector() prometheus.Collector { return u.counter }
