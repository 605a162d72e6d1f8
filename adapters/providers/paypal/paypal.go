// Package paypal verifies PayPal REST webhooks and normalizes them into
// delivery.Events.
//
// Verification is offline, on the raw bytes. PayPal signs
// transmission_id|transmission_time|webhook_id|crc32(body) (CRC-32 IEEE as an
// unsigned decimal, webhook_id being ours, from configuration) with RSA
// PKCS#1 v1.5 over SHA-256, and names its certificate in PAYPAL-CERT-URL.
// That certificate is never fetched: fetching a URL named by an
// unauthenticated request lets the sender choose both the key and the
// signature, and makes every webhook depend on the network. Instead the
// operator configures PayPal's signing certificates (PEM files); a signature
// passes if any of them, within its validity period, verifies it. The cert
// URL is still checked (https, a paypal.com host) as a sanity check on what
// the sender claims. PAYPAL-AUTH-ALGO must be SHA256withRSA. PayPal defines
// no replay window: the transmission time is bounded here to ±tolerance of
// the receive time, checked after the signature so that a stale-time answer
// is only ever given about an authentic delivery.
//
// Decisions:
//
//   - Every PayPal stream is keyed by the capture id. A refund names its
//     capture only through its "up" link and a dispute only through
//     disputed_transactions[].seller_transaction_id (the capture id); neither
//     carries the order id, so keying captures by order id would put refunds
//     and disputes on another stream. The order id
//     (supplementary_data.related_ids.order_id) stays in the raw payload.
//
//   - PAYMENT.CAPTURE.REVERSED carries no facts (recorded, posts nothing). A
//     reversal is PayPal taking the money back for a chargeback or dispute,
//     which PayPal also reports as CUSTOMER.DISPUTE.CREATED/RESOLVED with the
//     dispute id; the reversal does not carry that id, so mapping both would
//     count one chargeback twice under two ids. Subscribe to the dispute
//     events for chargebacks to reach the ledger.
//
//   - CUSTOMER.DISPUTE.RESOLVED maps dispute_outcome.outcome_code:
//     RESOLVED_BUYER_FAVOUR and ACCEPTED (the seller accepted the claim) →
//     dispute_lost; RESOLVED_SELLER_FAVOUR, CANCELED_BY_BUYER, DENIED and
//     RESOLVED_WITH_PAYOUT (PayPal paid the buyer itself) → dispute_won; any
//     other outcome → no facts. The amount is dispute_amount.
//
//   - A PayPal fee in another currency than the capture cannot be expressed
//     as one fact and is refused (400) rather than silently dropped.
//
// Mapping: PAYMENT.CAPTURE.COMPLETED → captured (business id = capture id,
// fee = seller_receivable_breakdown.paypal_fee); PAYMENT.CAPTURE.DENIED →
// failed; PAYMENT.CAPTURE.REFUNDED → refunded (business id = refund id;
// a refund resource still PENDING → no facts, FAILED/CANCELLED →
// refund_failed); CUSTOMER.DISPUTE.CREATED → dispute_opened (business id =
// DisputeID of the disputed capture, the id IPN gives the same dispute; the
// dispute_id is its LegacyID, the id such facts had before, see DisputeID);
// CUSTOMER.DISPUTE.RESOLVED as above. Other types: no facts.
package paypal

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Name is the provider name in URLs, stream ids and the inbox.
const Name = "paypal"

// The request headers PayPal signs with.
const (
	HeaderTransmissionID   = "Paypal-Transmission-Id"
	HeaderTransmissionTime = "Paypal-Transmission-Time"
	HeaderTransmissionSig  = "Paypal-Transmission-Sig"
	HeaderCertURL          = "Paypal-Cert-Url"
	HeaderAuthAlgo         = "Paypal-Auth-Algo"
)

// AuthAlgo is the only signature algorithm accepted.
const AuthAlgo = "SHA256withRSA"

// Adapter verifies and normalizes PayPal webhooks. Safe for concurrent use.
type Adapter struct {
	webhookID string
	certs     []*x509.Certificate
	tolerance time.Duration
}

var _ providers.Adapter = (*Adapter)(nil)

// New returns an adapter for the webhook webhookID (as shown in PayPal's
// dashboard), trusting the RSA certificates in certsPEM (each entry may hold
// several CERTIFICATE blocks), accepting transmission times within
// ±tolerance of the receive time.
func New(webhookID string, certsPEM [][]byte, tolerance time.Duration) (*Adapter, error) {
	a := &Adapter{webhookID: strings.TrimSpace(webhookID), tolerance: tolerance}
	if a.webhookID == "" {
		return nil, errors.New("paypal: no webhook id configured")
	}
	if tolerance <= 0 {
		return nil, fmt.Errorf("paypal: tolerance must be positive, got %v", tolerance)
	}
	for i, p := range certsPEM {
		rest := p
		found := 0
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("paypal: certificate file %d: %w", i+1, err)
			}
			if _, ok := c.PublicKey.(*rsa.PublicKey); !ok {
				return nil, fmt.Errorf("paypal: certificate file %d: %q has no RSA key", i+1, c.Subject.CommonName)
			}
			a.certs = append(a.certs, c)
			found++
		}
		if found == 0 {
			return nil, fmt.Errorf("paypal: certificate file %d holds no PEM certificate", i+1)
		}
	}
	if len(a.certs) == 0 {
		return nil, errors.New("paypal: no signing certificate configured")
	}
	return a, nil
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter: verify, then normalize one event.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	if err := a.verify(r.Header, r.Body, r.ReceivedAt()); err != nil {
		return nil, err
	}
	return providers.Single(normalize(r.Body))
}

// signedString is what PayPal signs for one transmission.
func signedString(transmissionID, transmissionTime, webhookID string, body []byte) string {
	return transmissionID + "|" + transmissionTime + "|" + webhookID + "|" +
		strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
}

func (a *Adapter) verify(h http.Header, body []byte, now time.Time) error {
	if h == nil {
		h = http.Header{}
	}
	id, ts, sigB64 := h.Get(HeaderTransmissionID), h.Get(HeaderTransmissionTime), h.Get(HeaderTransmissionSig)
	certURL, algo := h.Get(HeaderCertURL), h.Get(HeaderAuthAlgo)
	switch {
	case id == "":
		return providers.Unauthorized("missing PAYPAL-TRANSMISSION-ID header")
	case ts == "":
		return providers.Unauthorized("missing PAYPAL-TRANSMISSION-TIME header")
	case sigB64 == "":
		return providers.Unauthorized("missing PAYPAL-TRANSMISSION-SIG header")
	case certURL == "":
		return providers.Unauthorized("missing PAYPAL-CERT-URL header")
	case algo != AuthAlgo:
		return providers.Unauthorized(fmt.Sprintf("PAYPAL-AUTH-ALGO %q is not %s", algo, AuthAlgo))
	}
	if err := checkCertURL(certURL); err != nil {
		return providers.Unauthorized(err.Error())
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return providers.Unauthorized("PAYPAL-TRANSMISSION-SIG is not base64")
	}
	digest := sha256.Sum256([]byte(signedString(id, ts, a.webhookID, body)))
	ok := false
	for _, c := range a.certs {
		if now.Before(c.NotBefore) || now.After(c.NotAfter) {
			continue
		}
		if rsa.VerifyPKCS1v15(c.PublicKey.(*rsa.PublicKey), crypto.SHA256, digest[:], sig) == nil {
			ok = true
			break
		}
	}
	if !ok {
		return providers.Unauthorized("no trusted certificate verifies PAYPAL-TRANSMISSION-SIG")
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return providers.Unauthorized("PAYPAL-TRANSMISSION-TIME is not an RFC 3339 time")
	}
	if d := now.Sub(at); d > a.tolerance || d < -a.tolerance {
		return providers.Unauthorized(fmt.Sprintf("transmission time %s is outside the %v tolerance", ts, a.tolerance))
	}
	return nil
}

// checkCertURL accepts only https URLs on paypal.com or one of its subdomains
// (api.paypal.com, api.sandbox.paypal.com, ...), on the default port.
func checkCertURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("PAYPAL-CERT-URL is not a URL")
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case u.Scheme != "https":
		return errors.New("PAYPAL-CERT-URL is not https")
	case u.User != nil:
		return errors.New("PAYPAL-CERT-URL carries user info")
	case u.Port() != "" && u.Port() != "443":
		return errors.New("PAYPAL-CERT-URL names a non-default port")
	case host != "paypal.com" && !strings.HasSuffix(host, ".paypal.com"):
		return fmt.Errorf("PAYPAL-CERT-URL host %q is not a paypal.com host", host)
	}
	return nil
}

// SignHeaders returns the headers PayPal would send for body, signed with
// key. For tests and local tooling; production code only verifies.
func SignHeaders(key *rsa.PrivateKey, webhookID, transmissionID string, at time.Time, body []byte) (http.Header, error) {
	ts := at.UTC().Format(time.RFC3339)
	digest := sha256.Sum256([]byte(signedString(transmissionID, ts, webhookID, body)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(HeaderTransmissionID, transmissionID)
	h.Set(HeaderTransmissionTime, ts)
	h.Set(HeaderTransmissionSig, base64.StdEncoding.EncodeToString(sig))
	h.Set(HeaderCertURL, "https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1d93a270")
	h.Set(HeaderAuthAlgo, AuthAlgo)
	return h, nil
}
