// Package standard verifies Standard Webhooks (the scheme Svix also uses) and
// normalizes onceledger's own generic payment payload (docs/reference.md, "The
// standard provider's payload") into delivery.Events.
//
// Verification: headers webhook-id, webhook-timestamp and webhook-signature
// (or their svix-* twins); HMAC-SHA256 over id + "." + timestamp + "." + body,
// keyed with the base64-decoded part of the "whsec_..." secret; the signature
// header lists space-separated "v1,<base64>" entries (several during
// rotation; other versions such as v1a are ignored). The timestamp must lie
// within ±tolerance of the receive time. webhook-id is the dedup key.
package standard

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Name is the provider name in URLs, stream ids and the inbox.
const Name = "standard"

const secretPrefix = "whsec_"

// Adapter verifies and normalizes Standard Webhooks. It is safe for concurrent use.
type Adapter struct {
	keys      [][]byte
	tolerance time.Duration
}

var _ providers.Adapter = (*Adapter)(nil)

// New returns an adapter accepting signatures made with any of secrets
// ("whsec_<base64>"; the prefix is optional, as in the reference library;
// blank entries are skipped). It fails on a secret that is not base64, so a
// typo is found at startup rather than as 401s in production.
func New(secrets []string, tolerance time.Duration) (*Adapter, error) {
	keys, err := providers.Keys(secrets, func(pos int, s string) ([]byte, error) {
		key, err := decodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("standard: secret %d is not whsec_<base64>: %v", pos, err)
		}
		if len(key) == 0 {
			return nil, fmt.Errorf("standard: secret %d is empty", pos)
		}
		return key, nil
	})
	if err != nil {
		return nil, err
	}
	a := &Adapter{keys: keys, tolerance: tolerance}
	if len(a.keys) == 0 {
		return nil, errors.New("standard: no signing secret configured")
	}
	if tolerance <= 0 {
		return nil, fmt.Errorf("standard: tolerance must be positive, got %v", tolerance)
	}
	return a, nil
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter: verify first, on the raw bytes, then
// normalize. It returns exactly one event.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	id, err := a.verify(r.Header, r.Body, r.ReceivedAt())
	if err != nil {
		return nil, err
	}
	return providers.Single(normalize(id, r.Body))
}

// Sign returns the three webhook-* headers for body signed with secret, as a
// Standard Webhooks sender would send them. For tests and local tooling;
// production code only verifies.
func Sign(secret, msgID string, ts time.Time, body []byte) (http.Header, error) {
	key, err := decodeSecret(strings.TrimSpace(secret))
	if err != nil {
		return nil, fmt.Errorf("standard: secret is not whsec_<base64>: %v", err)
	}
	h := http.Header{}
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac(key, msgID, ts.Unix(), body)))
	return h, nil
}

// decodeSecret decodes "whsec_<base64>" (the prefix is optional).
func decodeSecret(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
}

func mac(key []byte, id string, ts int64, body []byte) []byte {
	var t [20]byte
	return providers.MACSHA256(key, []byte(id), dot, strconv.AppendInt(t[:0], ts, 10), dot, body)
}

var dot = []byte(".")

// headers returns id, timestamp and signature from the webhook-* set, or from
// the svix-* set when no webhook-* header is present. The sets are not mixed:
// a sender uses one naming throughout.
func headers(h http.Header) (id, ts, sig string, prefix string) {
	for _, set := range headerSets {
		id, ts, sig = h.Get(set.id), h.Get(set.ts), h.Get(set.sig)
		if id != "" || ts != "" || sig != "" {
			return id, ts, sig, set.prefix
		}
	}
	return "", "", "", "webhook-"
}

// headerSets are the two namings, their names canonical already: a name
// built per request ("webhook-" + "id") was canonicalized, and allocated,
// on every lookup.
var headerSets = func() []struct{ prefix, id, ts, sig string } {
	var out []struct{ prefix, id, ts, sig string }
	for _, p := range []string{"webhook-", "svix-"} {
		out = append(out, struct{ prefix, id, ts, sig string }{p,
			http.CanonicalHeaderKey(p + "id"), http.CanonicalHeaderKey(p + "timestamp"), http.CanonicalHeaderKey(p + "signature")})
	}
	return out
}()

// verify checks the signature before the timestamp, so that "timestamp
// outside tolerance" is only ever said about an authentic delivery. It
// returns the message id, the dedup key.
func (a *Adapter) verify(h http.Header, body []byte, now time.Time) (string, error) {
	id, tsText, sigs, prefix := headers(h)
	switch {
	case id == "":
		return "", providers.Unauthorized("missing " + prefix + "id header")
	case tsText == "":
		return "", providers.Unauthorized("missing " + prefix + "timestamp header")
	case sigs == "":
		return "", providers.Unauthorized("missing " + prefix + "signature header")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return "", providers.Unauthorized("invalid " + prefix + "timestamp header")
	}
	var candidates [][]byte
	for _, entry := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue // v1a (asymmetric) and future versions are not ours
		}
		raw, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(raw) != sha256.Size {
			continue // a garbled entry must not hide a valid one beside it
		}
		candidates = append(candidates, raw)
	}
	if len(candidates) == 0 {
		return "", providers.Unauthorized("no valid signature")
	}
	if !providers.MatchAny(a.keys, func(key []byte) []byte { return mac(key, id, ts, body) }, candidates...) {
		return "", providers.Unauthorized("no valid signature")
	}
	// Sub saturates instead of overflowing, so absurd timestamps still compare.
	if d := now.Sub(time.Unix(ts, 0)); d > a.tolerance || d < -a.tolerance {
		return "", providers.Unauthorized("timestamp outside tolerance")
	}
	return id, nil
}
