package payment

import (
	"regexp"
	"strings"
)

// A subscription_disabled item is read by everyone who may read
// reconciliation items: read tokens (/v1/reconciliation, /v1/events), the
// console, the read-only database role, every push subscriber and NATS.
// A subscription's URL often is its credential (a Slack-style
// /services/T/B/SECRET path, an ?api_key= query) and a receiver's error
// body may echo it, so the item names the subscription and the URL's host
// only; the URL and the last error stay on the admin endpoints
// (GET /v1/subscriptions/{id}).

// SubscriptionDisabledDetails is the details text of the
// subscription_disabled item of subscription sub, whose URL's host is host
// ("" when unknown).
func SubscriptionDisabledDetails(sub, host string) string {
	if host == "" {
		host = "(unknown)"
	}
	return "push subscription " + sub + " to host " + host +
		" disabled after its retry schedule; its URL and last error are on GET /v1/subscriptions/" + sub +
		" (admin); re-enable it once the endpoint answers"
}

var (
	// The text items had before issue 33: "push subscription to URL
	// disabled after its retry schedule: LAST ERROR; …". Group 1 is the
	// URL's host (an IPv6 literal with its brackets). The same expression
	// redacts stored rows in migration 00105, so that a rebuild and the
	// migrated table agree byte for byte.
	leakyDetails = regexp.MustCompile(`^push subscription to [A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@ ]*@)?(\[[^]/?# ]*\]|[^/?#: ]*)`)
	// The current text: group 1 is the host.
	redactedDetails = regexp.MustCompile(`^push subscription [^ ]+ to host ([^ ]*) disabled after its retry schedule;`)
)

// PublicDetails is the details of a reconciliation item of kind with key as
// every reader sees them. For subscription_disabled, the text is rebuilt
// from the key and the URL's host whatever the stored event says: events
// recorded before the redaction carried the whole URL and the receiver's
// error, and history is never edited, so every read path (projections,
// rebuilds, the outbound feed, the console's timeline) passes through here.
// Other kinds are returned as they are.
func PublicDetails(kind, key, details string) string {
	if kind != ReconSubscriptionDisabled {
		return details
	}
	host := ""
	if m := redactedDetails.FindStringSubmatch(details); m != nil {
		host = m[1]
	} else if m := leakyDetails.FindStringSubmatch(details); m != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(m[1], "["), "]")
	}
	if host == "(unknown)" {
		host = ""
	}
	return SubscriptionDisabledDetails(key, host)
}
