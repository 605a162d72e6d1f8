// Package stripefake is a protocol double of the Stripe API list endpoints
// the stripeapi client uses, for tests (unit and end to end): an
// http.Handler serving GET /v1/balance_transactions, /v1/payouts and
// /v1/events from objects the test adds, with Stripe's list semantics —
// newest first, limit (default 10, at most 100), starting_after, has_more,
// created[gte] / created[gt] / created[lte] / created[lt], payout= on
// balance transactions, expand[]=data.source (sources are stored expanded
// and collapsed to their id unless asked for) — bearer-key authentication,
// and injected 429 answers with Retry-After.
//
// Serve it with httptest.NewServer(fake) and point the client (or
// ONCELEDGER_STRIPE_API_BASE) at the server's URL.
package stripefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/onceledger/onceledger/domain/settlement"
)

// Fake is the double. Safe for concurrent use.
type Fake struct {
	key string

	mu        sync.Mutex
	seq       int
	bts       []object
	payouts   []object
	events    []object
	limited   int    // how many next requests get 429
	retryHdr  string // their Retry-After
	requests  []string
	maxPerReq int
	balance   []byte                   // GET /v1/balance's answer (balance.go)
	pis       map[string]PaymentIntent // paymentintents.go
}

type object struct {
	id      string
	created int64
	seq     int    // insertion order breaks ties: the later, the newer
	payout  string // balance transactions: the payout they were paid out in
	raw     map[string]json.RawMessage
}

// New returns a fake accepting the secret key key (sent as
// "Authorization: Bearer <key>", or as the Basic user name as Stripe allows).
func New(key string) *Fake { return &Fake{key: key, maxPerReq: 100} }

func (f *Fake) add(list *[]object, raw []byte, payout string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("stripefake: not a JSON object: %w", err)
	}
	var id string
	var created int64
	if err := json.Unmarshal(m["id"], &id); err != nil || id == "" {
		return fmt.Errorf("stripefake: object without an id")
	}
	if err := json.Unmarshal(m["created"], &created); err != nil {
		return fmt.Errorf("stripefake: object %s without created", id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	*list = append(*list, object{id: id, created: created, seq: f.seq, payout: payout, raw: m})
	return nil
}

// AddBalanceTransaction adds a BalanceTransaction object (JSON, with its
// source expanded as an object when it has one) paid out in payout ("" for
// none). It is listed by GET /v1/balance_transactions, and with
// ?payout=payout.
func (f *Fake) AddBalanceTransaction(payout string, bt []byte) error {
	return f.add(&f.bts, bt, payout)
}

// AddPayout adds a Payout object, listed by GET /v1/payouts.
func (f *Fake) AddPayout(po []byte) error { return f.add(&f.payouts, po, "") }

// AddEvent adds an Event object (the shape of a webhook body), listed by
// GET /v1/events.
func (f *Fake) AddEvent(ev []byte) error { return f.add(&f.events, ev, "") }

// RateLimit makes the next n requests answer 429 with the given
// Retry-After header value ("" for none).
func (f *Fake) RateLimit(n int, retryAfter string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limited, f.retryHdr = n, retryAfter
}

// Requests returns the request URIs served so far, in order (429s included).
func (f *Fake) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

type apiError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Param   string `json:"param,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, typ, msg, param string) {
	var e apiError
	e.Error.Type, e.Error.Message, e.Error.Param = typ, msg, param
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e)
}

// ServeHTTP implements the list endpoints.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.RequestURI())
	if f.limited > 0 {
		f.limited--
		hdr := f.retryHdr
		f.mu.Unlock()
		if hdr != "" {
			w.Header().Set("Retry-After", hdr)
		}
		writeError(w, http.StatusTooManyRequests, "invalid_request_error", "Too many requests hit the API too quickly.", "")
		return
	}
	f.mu.Unlock()

	if !f.authorized(r) {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "Invalid API Key provided.", "")
		return
	}
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "only GET is served", "")
		return
	}
	if r.URL.Path == "/v1/balance" {
		f.serveBalance(w) // balance.go
		return
	}
	var list []object
	switch r.URL.Path {
	case "/v1/balance_transactions":
		list = f.snapshot(f.bts)
	case "/v1/payouts":
		list = f.snapshot(f.payouts)
	case "/v1/events":
		list = f.snapshot(f.events)
	default:
		if f.paymentIntent(w, r) { // paymentintents.go
			return
		}
		writeError(w, http.StatusNotFound, "invalid_request_error", "Unrecognized request URL (GET: "+r.URL.Path+").", "")
		return
	}
	q := r.URL.Query()
	list, err := filter(list, q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "")
		return
	}
	limit := 10
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > f.maxPerReq {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "Invalid integer: "+s, "limit")
			return
		}
		limit = n
	}
	if after := q.Get("starting_after"); after != "" {
		i := indexOf(list, after)
		if i < 0 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "No such object: '"+after+"'", "starting_after")
			return
		}
		list = list[i+1:]
	}
	hasMore := len(list) > limit
	if hasMore {
		list = list[:limit]
	}
	expandSource := false
	for _, e := range q["expand[]"] {
		expandSource = expandSource || e == "data.source"
	}
	data := make([]json.RawMessage, 0, len(list))
	for _, o := range list {
		data = append(data, render(o, r.URL.Path == "/v1/balance_transactions" && !expandSource))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list", "url": r.URL.Path, "has_more": hasMore, "data": data,
	})
}

func (f *Fake) authorized(r *http.Request) bool {
	if user, _, ok := r.BasicAuth(); ok {
		return user == f.key
	}
	return r.Header.Get("Authorization") == "Bearer "+f.key
}

// snapshot copies a list newest first.
func (f *Fake) snapshot(list []object) []object {
	f.mu.Lock()
	out := append([]object(nil), list...)
	f.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].created != out[j].created {
			return out[i].created > out[j].created
		}
		return out[i].seq > out[j].seq
	})
	return out
}

func filter(list []object, q map[string][]string) ([]object, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	bounds := map[string]func(c, v int64) bool{
		"created[gte]": func(c, v int64) bool { return c >= v },
		"created[gt]":  func(c, v int64) bool { return c > v },
		"created[lte]": func(c, v int64) bool { return c <= v },
		"created[lt]":  func(c, v int64) bool { return c < v },
	}
	out := list[:0:0]
	payout := get("payout")
	types := q["types[]"]
	if t := get("type"); t != "" {
		types = append(types, t)
	}
	for _, o := range list {
		keep := payout == "" || o.payout == payout
		for k, cmp := range bounds {
			if s := get(k); s != "" {
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("Invalid integer: %s", s)
				}
				keep = keep && cmp(o.created, v)
			}
		}
		if len(types) > 0 {
			var typ string
			_ = json.Unmarshal(o.raw["type"], &typ)
			match := false
			for _, t := range types {
				match = match || t == typ || (strings.HasSuffix(t, ".*") && strings.HasPrefix(typ, strings.TrimSuffix(t, "*")))
			}
			keep = keep && match
		}
		if keep {
			out = append(out, o)
		}
	}
	return out, nil
}

func indexOf(list []object, id string) int {
	for i, o := range list {
		if o.id == id {
			return i
		}
	}
	return -1
}

// render writes an object, collapsing an expanded source to its id unless
// the request expanded it.
func render(o object, collapseSource bool) json.RawMessage {
	m := o.raw
	if src, ok := m["source"]; ok && collapseSource && len(src) > 0 && src[0] == '{' {
		var s struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(src, &s) == nil {
			m = make(map[string]json.RawMessage, len(o.raw))
			for k, v := range o.raw {
				m[k] = v
			}
			m["source"], _ = json.Marshal(s.ID)
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// BalanceTransaction renders a settlement line as the BalanceTransaction
// object Stripe would list for it, source expanded (a charge, refund or
// dispute naming its PaymentIntent and charge; a payout), so that tests can
// build the API's view of the lines they expect. Amounts are written as
// they are: right for every currency Stripe counts like ISO 4217 (all but
// ISK and MGA).
func BalanceTransaction(l settlement.Line) []byte {
	category := map[settlement.Kind]string{
		settlement.KindCharge: "charge", settlement.KindRefund: "refund", settlement.KindDispute: "dispute",
		settlement.KindDisputeReversal: "dispute_reversal", settlement.KindFee: "fee", settlement.KindPayout: "payout",
	}[l.Kind]
	if category == "" {
		category = "other_adjustment"
	}
	bt := map[string]any{
		"id": l.LineID, "object": "balance_transaction", "amount": l.Gross, "fee": l.Fee, "net": l.Net,
		"currency": strings.ToLower(string(l.Currency)), "created": l.OccurredAt.Unix(),
		"reporting_category": category, "type": category, "exchange_rate": nil,
	}
	if !l.AvailableOn.IsZero() {
		bt["available_on"] = l.AvailableOn.Unix()
	}
	if l.ExchangeRate != "" {
		bt["exchange_rate"] = json.Number(l.ExchangeRate)
	}
	abs := func(v int64) int64 {
		if v < 0 {
			return -v
		}
		return v
	}
	var pi any
	if l.PaymentKey != "" && l.PaymentKey != l.CaptureID {
		pi = l.PaymentKey
	}
	src := map[string]any{"amount": abs(l.OriginalAmount), "currency": strings.ToLower(string(l.OriginalCurrency)), "payment_intent": pi}
	switch l.Kind {
	case settlement.KindCharge:
		src["id"], src["object"], src["amount_captured"] = l.CaptureID, "charge", abs(l.OriginalAmount)
	case settlement.KindRefund:
		src["id"], src["object"], src["charge"] = l.RefundID, "refund", l.CaptureID
	case settlement.KindDispute, settlement.KindDisputeReversal:
		src["id"], src["object"], src["charge"] = l.DisputeID, "dispute", l.CaptureID
	case settlement.KindPayout:
		src = map[string]any{"id": l.PayoutID, "object": "payout", "amount": abs(l.Gross), "currency": bt["currency"]}
	default:
		src = nil
	}
	if src != nil {
		bt["source"] = src
	}
	b, _ := json.Marshal(bt)
	return b
}

// PartialCapture returns the two balance transactions of a charge l
// authorized for l.Gross and captured for captured (Stripe before API
// version 2025-03-31.basil): one "for the full amount of the
// authorization" (l, its source the charge with amount_captured), and one
// "reversing the uncaptured portion" [docs.stripe.com/reports/
// reporting-categories, partial-capture reversals], txn reversalTxn,
// reporting_category partial_capture_reversal, its source the refund
// refundID of the charge. Same currency only.
func PartialCapture(l settlement.Line, captured int64, reversalTxn, refundID string) (charge, reversal []byte) {
	var bt map[string]any
	_ = json.Unmarshal(BalanceTransaction(l), &bt)
	bt["source"].(map[string]any)["amount_captured"] = captured
	charge, _ = json.Marshal(bt)
	var pi any
	if l.PaymentKey != l.CaptureID {
		pi = l.PaymentKey
	}
	uncaptured := l.Gross - captured
	reversal, _ = json.Marshal(map[string]any{
		"id": reversalTxn, "object": "balance_transaction", "amount": -uncaptured, "fee": 0, "net": -uncaptured,
		"currency": strings.ToLower(string(l.Currency)), "created": l.OccurredAt.Unix(),
		"reporting_category": "partial_capture_reversal", "type": "payment_refund", "exchange_rate": nil,
		"source": map[string]any{"id": refundID, "object": "refund", "amount": uncaptured,
			"currency": strings.ToLower(string(l.Currency)), "charge": l.CaptureID, "payment_intent": pi},
	})
	return charge, reversal
}
