package httpapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	webhooks  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	conflicts *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_webhooks_total",
			Help: "Webhook deliveries by provider and outcome (accepted, duplicate, ignored, unauthorized, bad_request, too_large, not_found, unavailable).",
		}, []string{"provider", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceledger_webhook_duration_seconds",
			Help:    "Time from receiving a webhook to answering it.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"provider"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_webhook_conflicts_total",
			Help: "Redeliveries of a known dedup key with a different payload.",
		}, []string{"provider"}),
	}
	reg.MustRegister(m.webhooks, m.latency, m.conflicts)
	return m
}

func (m *metrics) observeWebhook(provider, outcome string, start time.Time) {
	m.webhooks.WithLabelValues(provider, outcome).Inc()
	m.latency.WithLabelValues(provider).Observe(time.Since(start).Seconds())
}
