package payment_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/domain/payment"
)

func TestPublicDetailsRedactsSubscriptionURLs(t *testing.T) {
	const sub = "7b0c2f9e-8a51-4d7e-9f0e-1c2d3e4f5a6b"
	old := func(url, last string) string {
		// The text items carried before issue 33.
		return "push subscription to " + url + " disabled after its retry schedule: " + last + "; re-enable it once the endpoint answers"
	}
	cases := map[string]struct{ details, host string }{
		"slack path":       {old("https://hooks.example.com/services/T0/B0/SECRETsecret", "HTTP 500: SECRETsecret invalid"), "hooks.example.com"},
		"api key in query": {old("https://api.example.com:8443/in?api_key=SECRETsecret", `Post "https://api.example.com:8443/in?api_key=SECRETsecret": EOF`), "api.example.com"},
		"user info":        {old("https://user:SECRETsecret@example.net/x", "EOF"), "example.net"},
		"ipv6 literal":     {old("http://[2001:db8::1]:9000/SECRETsecret", "EOF"), "2001:db8::1"},
		"no path":          {old("https://example.org", "SECRETsecret"), "example.org"},
		"unrecognized":     {"SECRETsecret https://example.org/SECRETsecret", ""},
		"already redacted": {payment.SubscriptionDisabledDetails(sub, "example.com"), "example.com"},
		"unknown host":     {payment.SubscriptionDisabledDetails(sub, ""), ""},
	}
	for name, c := range cases {
		got := payment.PublicDetails(payment.ReconSubscriptionDisabled, sub, c.details)
		assert.Equal(t, payment.SubscriptionDisabledDetails(sub, c.host), got, name)
		assert.NotContains(t, got, "SECRET", name)
		assert.Contains(t, got, sub, name)
	}
	assert.Equal(t, "refunds exceed captures", payment.PublicDetails(payment.ReconOverRefund, "refunds", "refunds exceed captures"),
		"other kinds are left alone")
}
