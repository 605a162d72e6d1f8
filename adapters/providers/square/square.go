// Package square verifies Square webhooks and normalizes them into
// delivery.Events.
//
// Square signs notification_url + body with HMAC-SHA256 keyed with the
// subscription's signature key (the key string as is) and sends the base64
// result in x-square-hmacsha256-signature. The URL is part of the signed
// bytes and must be byte-exact as subscribed, so it comes from configuration;
// the request's reconstructed public URL is used only when none is
// configured (behind proxies it is easy to get subtly wrong). Several keys
// may be configured (rotation); any match passes, compared in constant time.
// The legacy HMAC-SHA1 header x-square-signature is not accepted. Square
// defines no replay window; event_id is the dedup key.
//
// Mapping: payment.created / payment.updated read data.object.payment:
// COMPLETED → captured (business id = payment id; fee = sum of
// processing_fee[].amount_money), APPROVED → authorized, FAILED → failed,
// CANCELED → canceled, anything else → no facts. refund.created /
// refund.updated read data.object.refund: COMPLETED → refunded (business id =
// refund id, payment key = payment_id), FAILED / REJECTED → refund_failed,
// PENDING → no facts. dispute.created, dispute.state.updated and
// dispute.state.changed by the dispute's state: INQUIRY_EVIDENCE_REQUIRED /
// INQUIRY_PROCESSING → dispute_inquiry (no funds), INQUIRY_CLOSED and WON →
// dispute_won, EVIDENCE_REQUIRED / PROCESSING → dispute_opened (funds taken),
// LOST / ACCEPTED → dispute_lost (business id = the dispute id, payment key =
// disputed_payment.payment_id). Every other type carries no facts.
//
// Decisions: the captured amount is total_money when present (amount_money
// plus tip: the money actually taken), else amount_money. Square may report
// a COMPLETED payment again later with processing_fee filled in; both carry
// the same business id, so which fee the ledger keeps is the domain's rule
// for a capture reported twice.
package square

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Name is the provider name in URLs, stream ids and the inbox.
const Name = "square"

// SignatureHeader carries base64(HMAC-SHA256(key, notification URL + body)).
const SignatureHeader = "X-Square-Hmacsha256-Signature"

// Adapter verifies and normalizes Square webhooks. Safe for concurrent use.
type Adapter struct {
	keys [][]byte
	url  string
}

var _ providers.Adapter = (*Adapter)(nil)

// New returns an adapter accepting signatures made with any of signatureKeys
// (blank entries skipped) over notificationURL + body. notificationURL must be
// the subscription's URL exactly; if empty, each request's URL is used.
func New(signatureKeys []string, notificationURL string) (*Adapter, error) {
	keys, _ := providers.Keys(signatureKeys, nil) // raw bytes: cannot fail
	a := &Adapter{keys: keys, url: strings.TrimSpace(notificationURL)}
	if len(a.keys) == 0 {
		return nil, errors.New("square: no signature key configured")
	}
	return a, nil
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter: verify, then normalize one event.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	url := a.url
	if url == "" {
		url = r.URL
	}
	if url == "" {
		return nil, providers.Unauthorized("no notification URL to verify against")
	}
	var sig string
	if r.Header != nil {
		sig = r.Header.Get(SignatureHeader)
	}
	if !a.verify(url, r.Body, sig) {
		return nil, providers.Unauthorized("x-square-hmacsha256-signature missing or does not match")
	}
	return providers.Single(normalize(r.Body))
}

func mac(key []byte, url string, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(url))
	h.Write(body)
	return h.Sum(nil)
}

func (a *Adapter) verify(url string, body []byte, sigB64 string) bool {
	if sigB64 == "" {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return false
	}
	return providers.MatchAny(a.keys, func(k []byte) []byte { return mac(k, url, body) }, sig)
}

// Sign returns the x-square-hmacsha256-signature value Square would send. For
// tests and local tooling; production code only verifies.
func Sign(key, notificationURL string, body []byte) string {
	return base64.StdEncoding.EncodeToString(mac([]byte(key), notificationURL, body))
}

type moneyT struct {
	Amount   *int64 `json:"amount"`
	Currency string `json:"currency"`
}

type envelope struct {
	EventID   string `json:"event_id"`
	Type      string `json:"type"`
	CreatedAt string `json:"created_at"`
	Data      *struct {
		Object map[string]json.RawMessage `json:"object"`
	} `json:"data"`
}

type payment struct {
	ID            string  `json:"id"`
	Status        string  `json:"status"`
	AmountMoney   *moneyT `json:"amount_money"`
	TotalMoney    *moneyT `json:"total_money"`
	ProcessingFee []struct {
		AmountMoney *moneyT `json:"amount_money"`
	} `json:"processing_fee"`
	DelayAction string `json:"delay_action"`
}

type refund struct {
	ID          string  `json:"id"`
	Status      string  `json:"status"`
	AmountMoney *moneyT `json:"amount_money"`
	PaymentID   string  `json:"payment_id"`
	Reason      string  `json:"reason"`
}

type dispute struct {
	ID              string  `json:"id"`
	DisputeID       string  `json:"dispute_id"`
	State           string  `json:"state"`
	Reason          string  `json:"reason"`
	AmountMoney     *moneyT `json:"amount_money"`
	DisputedPayment *struct {
		PaymentID string `json:"payment_id"`
	} `json:"disputed_payment"`
}

func normalize(raw []byte) (delivery.Event, error) {
	var env envelope
	if err := payload.DecodeBody(raw, &env); err != nil {
		return delivery.Event{}, err
	}
	if env.EventID == "" {
		return delivery.Event{}, fmt.Errorf("%w: event_id", delivery.ErrMissingField)
	}
	if env.Type == "" {
		return delivery.Event{}, fmt.Errorf("%w: type", delivery.ErrMissingField)
	}
	at, err := payload.RFC3339("created_at", env.CreatedAt)
	if err != nil {
		return delivery.Event{}, err
	}
	ev := delivery.Event{
		Provider:    Name,
		DedupKey:    env.EventID,
		Type:        env.Type,
		OccurredAt:  at,
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	switch env.Type {
	case "payment.created", "payment.updated":
		var p payment
		if err := object(env, "payment", &p); err != nil {
			return delivery.Event{}, err
		}
		err = paymentFacts(&ev, p)
	case "refund.created", "refund.updated":
		var r refund
		if err := object(env, "refund", &r); err != nil {
			return delivery.Event{}, err
		}
		err = refundFacts(&ev, r)
	case "dispute.created", "dispute.state.updated", "dispute.state.changed":
		var d dispute
		if err := object(env, "dispute", &d); err != nil {
			return delivery.Event{}, err
		}
		err = disputeFacts(&ev, d)
	}
	if err != nil {
		return delivery.Event{}, err
	}
	return ev, nil
}

// object decodes data.object.<name>.
func object(env envelope, name string, v any) error {
	field := "data.object." + name
	if env.Data == nil || env.Data.Object == nil {
		return fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
	}
	return payload.DecodeMember(env.Data.Object[name], v, field)
}

func paymentFacts(ev *delivery.Event, p payment) error {
	const field = "data.object.payment"
	if p.ID == "" {
		return fmt.Errorf("%w: %s.id", delivery.ErrMissingField, field)
	}
	ev.PaymentKey = p.ID
	switch p.Status {
	case "COMPLETED":
		m, name := p.TotalMoney, field+".total_money"
		if m == nil {
			m, name = p.AmountMoney, field+".amount_money"
		}
		amt, cur, err := parseMoney(m, name)
		if err != nil {
			return err
		}
		var fee int64
		for i, f := range p.ProcessingFee {
			name := fmt.Sprintf("%s.processing_fee[%d].amount_money", field, i)
			if f.AmountMoney == nil || f.AmountMoney.Amount == nil {
				return fmt.Errorf("%w: %s", delivery.ErrMissingField, name)
			}
			fc, err := money.ParseCurrency(f.AmountMoney.Currency)
			if err != nil {
				return fmt.Errorf("%s.currency: %w", name, err)
			}
			if fc != cur {
				return fmt.Errorf("%w: %s is in %s, the payment in %s", delivery.ErrInvalidAmount, name, fc, cur)
			}
			// Adjustments may be negative; the sum is checked by Validate.
			fee += *f.AmountMoney.Amount
		}
		ev.Facts = []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: p.ID, Amount: amt, Fee: fee, Currency: cur}}
	case "APPROVED":
		amt, cur, err := parseMoney(p.AmountMoney, field+".amount_money")
		if err != nil {
			return err
		}
		ev.Facts = []delivery.Fact{{Kind: delivery.KindAuthorized, Amount: amt, Currency: cur}}
	case "FAILED":
		f := delivery.Fact{Kind: delivery.KindFailed}
		// The attempted amount_money, kept with the failure when it reads;
		// it posts nothing.
		if amt, cur, err := parseMoney(p.AmountMoney, field+".amount_money"); err == nil {
			f.Amount, f.Currency = amt, cur
		}
		ev.Facts = []delivery.Fact{f}
	case "CANCELED":
		ev.Facts = []delivery.Fact{{Kind: delivery.KindCanceled}}
	}
	return nil
}

func refundFacts(ev *delivery.Event, r refund) error {
	const field = "data.object.refund"
	if r.ID == "" {
		return fmt.Errorf("%w: %s.id", delivery.ErrMissingField, field)
	}
	if r.PaymentID == "" {
		return fmt.Errorf("%w: %s.payment_id", delivery.ErrMissingField, field)
	}
	ev.PaymentKey = r.PaymentID
	var kind delivery.Kind
	switch r.Status {
	case "COMPLETED":
		kind = delivery.KindRefunded
	case "FAILED", "REJECTED":
		kind = delivery.KindRefundFailed
	default:
		return nil // PENDING: no money moved yet
	}
	amt, cur, err := parseMoney(r.AmountMoney, field+".amount_money")
	if err != nil {
		return err
	}
	f := delivery.Fact{Kind: kind, BusinessID: r.ID, Amount: amt, Currency: cur}
	if kind == delivery.KindRefundFailed {
		f.Reason = r.Status
	}
	ev.Facts = []delivery.Fact{f}
	return nil
}

func disputeFacts(ev *delivery.Event, d dispute) error {
	const field = "data.object.dispute"
	id := d.ID
	if id == "" {
		id = d.DisputeID
	}
	if id == "" {
		return fmt.Errorf("%w: %s.id", delivery.ErrMissingField, field)
	}
	if d.DisputedPayment == nil || d.DisputedPayment.PaymentID == "" {
		return fmt.Errorf("%w: %s.disputed_payment.payment_id", delivery.ErrMissingField, field)
	}
	ev.PaymentKey = d.DisputedPayment.PaymentID
	// Square's dispute states (Disputes API, DisputeState): an inquiry
	// (INQUIRY_EVIDENCE_REQUIRED, INQUIRY_PROCESSING) is the card issuer
	// asking questions before any chargeback, and holds no funds;
	// INQUIRY_CLOSED ends it without one. A chargeback (EVIDENCE_REQUIRED,
	// PROCESSING) has the disputed amount taken from the seller's balance,
	// returned if WON, kept if LOST or ACCEPTED. The ledger follows those
	// funds: every state names the dispute id, so reports of one state under
	// several event types are one fact.
	var kind delivery.Kind
	switch d.State {
	case "INQUIRY_EVIDENCE_REQUIRED", "INQUIRY_PROCESSING":
		kind = delivery.KindDisputeInquiry
	case "INQUIRY_CLOSED", "WON":
		kind = delivery.KindDisputeWon
	case "EVIDENCE_REQUIRED", "PROCESSING":
		kind = delivery.KindDisputeOpened
	case "LOST", "ACCEPTED":
		kind = delivery.KindDisputeLost
	default:
		if ev.Type != "dispute.created" {
			return nil // a state we do not read: recorded, posts nothing
		}
		// A new dispute in a state not listed above: Square opens
		// chargebacks with their funds taken.
		kind = delivery.KindDisputeOpened
	}
	amt, cur, err := parseMoney(d.AmountMoney, field+".amount_money")
	if err != nil {
		return err
	}
	ev.Facts = []delivery.Fact{{Kind: kind, BusinessID: id, Amount: amt, Currency: cur, Reason: d.Reason}}
	return nil
}

// parseMoney reads a Square Money object: integer minor units and a currency.
func parseMoney(m *moneyT, field string) (int64, money.Currency, error) {
	if m == nil {
		return 0, "", fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
	}
	if m.Amount == nil {
		return 0, "", fmt.Errorf("%w: %s.amount", delivery.ErrMissingField, field)
	}
	if *m.Amount < 0 {
		return 0, "", fmt.Errorf("%w: %s.amount %d is negative", delivery.ErrInvalidAmount, field, *m.Amount)
	}
	cur, err := payload.Currency(field+".currency", m.Currency)
	if err != nil {
		return 0, "", err
	}
	return *m.Amount, cur, nil
}
