package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// QueryStore is what the /v1 API reads the read models through
// (readmodel.Store). List methods stream rows to fn, so that a large answer
// goes out as it is read.
type QueryStore interface {
	Balances(ctx context.Context, f views.BalanceFilter, fn func(views.Balance) error) error
	Entries(ctx context.Context, f views.EntryFilter, fn func(views.Entry) error) error
	Payment(ctx context.Context, provider, paymentID string) (views.Payment, bool, error)
	Reconciliation(ctx context.Context, f views.ReconciliationFilter, fn func(views.ReconciliationItem) error) error
}

// StreamReader reads one stream of the event store (any eventstore.Store),
// for the events of GET /v1/payments/{provider}/{payment_id}.
type StreamReader = projections.StreamReader

// ProjectionsReader reads the projections' status for GET /v1/projections
// (projections.StatusReader: one computation for the CLI, the API and the
// metrics, right for every event store).
type ProjectionsReader interface {
	Projections(ctx context.Context) (views.Status, error)
}

// Ledger pages: the default and the largest page size.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

var (
	errQueryNotConfigured = errors.New("query API not configured")
	errMethodNotAllowed   = errors.New("method not allowed")
	errQueryUnavailable   = errors.New("the read models are unavailable; retry later")
)

// registerQuery mounts the bearer-protected /v1 query API.
func (s *server) registerQuery(r *mux.Router) {
	auth := s.tokenAuth()
	v1 := r.PathPrefix("/v1").Subrouter()
	v1.Use(auth.middleware, noStore)
	v1.HandleFunc("/balances", s.queryBalances).Methods(http.MethodGet)
	// The id is the rest of the path: it may hold '/' (sent escaped).
	v1.HandleFunc("/payments/{provider}/{payment_id:.+}", s.queryPayment).Methods(http.MethodGet)
	v1.HandleFunc("/ledger/entries", s.queryEntries).Methods(http.MethodGet)
	v1.HandleFunc("/reconciliation", s.queryReconciliation).Methods(http.MethodGet)
	v1.HandleFunc("/projections", s.queryProjections).Methods(http.MethodGet)
	s.registerPeriods(v1)
	s.registerExport(v1) // issue 38
	v1.Handle("/inbox/erase", acting(s.eraseRaw)).Methods(http.MethodPost)
	v1.Handle("/reconciliation/resolve", acting(s.itemAction(true))).Methods(http.MethodPost)
	v1.Handle("/reconciliation/reopen", acting(s.itemAction(false))).Methods(http.MethodPost)
	v1.Handle("/inbox/redrive", acting(s.inboxRedrive)).Methods(http.MethodPost)
	s.registerSettlements(v1)    // settlements.go
	s.registerEvents(v1)         // events.go
	s.registerSubscriptions(v1)  // subscriptions.go
	s.registerBalances(v1)       // balances.go
	s.registerBankStatements(v1) // bankstatements.go
	s.registerExpected(v1)       // expected.go
	// Any other /v1 request goes through the token check too, so that an
	// unauthenticated caller cannot probe which paths exist; then it is a
	// 405 with Allow for a known path and another method, else a 404. Every
	// /v1 route must be registered above this line.
	v1.PathPrefix("/").Name(v1CatchAll).HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = method
			var m mux.RouteMatch
			if v1.Match(probe, &m) && m.Route != nil && m.Route.GetName() != v1CatchAll {
				allow = append(allow, method)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			fail(w, errMethodNotAllowed)
			return
		}
		fail(w, errNotFound)
	})
}

// v1CatchAll names the route that answers 404 under /v1 (after the token
// check); it is not an endpoint.
const v1CatchAll = "v1-not-found"

// noStore keeps ledger data out of shared caches.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// queryStore answers the first bad parameter of q, or 503 when no store is
// configured; else it returns the store.
func (s *server) queryStore(w http.ResponseWriter, r *http.Request, q *query) (QueryStore, bool) {
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return nil, false
	}
	if s.cfg.Query == nil {
		fail(w, errQueryNotConfigured)
		return nil, false
	}
	return s.cfg.Query, true
}

// GET /v1/balances?currency=&account=&as_of=
func (s *server) queryBalances(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	f := views.BalanceFilter{AccountPrefix: q.Get("account"), Currency: q.Currency("currency"), AsOf: q.Time("as_of"),
		Booked: q.booked()}
	store, ok := s.queryStore(w, r, q)
	if !ok {
		return
	}
	out := newRowWriter(w, format, "balances", []string{"account", "currency", "balance", "balance_decimal"},
		"balance", "balance_decimal")
	err := store.Balances(r.Context(), f, func(b views.Balance) error {
		dec := money.FormatMinor(b.Balance, money.Currency(b.Currency))
		return out.row(balanceJSON{Account: b.Account, Currency: b.Currency, Balance: b.Balance, BalanceDecimal: dec},
			[]string{b.Account, b.Currency, strconv.FormatInt(b.Balance, 10), dec})
	})
	s.finishRows(w, r, out, err, nil)
}

type balanceJSON struct {
	Account        string `json:"account"`
	Currency       string `json:"currency"`
	Balance        int64  `json:"balance"`
	BalanceDecimal string `json:"balance_decimal"`
}

// GET /v1/ledger/entries?account=&currency=&from=&to=&cursor=&limit=
func (s *server) queryEntries(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	f := views.EntryFilter{
		AccountPrefix: q.Get("account"), Currency: q.Currency("currency"),
		From: q.Time("from"), To: q.Time("to"), After: q.cursor(), Booked: q.booked(),
	}
	limit := q.limit()
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		q.Fail("to: must not be before from")
	}
	store, ok := s.queryStore(w, r, q)
	if !ok {
		return
	}
	// One row more than the page tells whether there is a next page. A page
	// is at most maxPageSize+1 rows, so it is collected before anything is
	// written: the next cursor then goes into a header as well, where a CSV
	// client can find it.
	f.Limit = limit + 1
	page := make([]views.Entry, 0, min(f.Limit, 128))
	err := store.Entries(r.Context(), f, func(e views.Entry) error {
		page = append(page, e)
		return nil
	})
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = encodeCursor(page[len(page)-1].Key())
		w.Header().Set("Next-Cursor", next)
	}
	out := newRowWriter(w, format, "entries", []string{
		"id", "event_id", "posting_index", "stream_id", "event_type", "provider", "account",
		"currency", "amount", "amount_decimal", "occurred_at", "recorded_at",
		"position_commit", "position_prepare",
	}, "amount", "amount_decimal")
	for _, e := range page {
		dec := money.FormatMinor(e.Amount, money.Currency(e.Currency))
		err = out.row(entryJSON{
			ID: e.ID, EventID: e.EventID.String(), PostingIndex: e.PostingIndex, StreamID: e.StreamID,
			EventType: e.EventType, Provider: e.Provider, Account: e.Account, Currency: e.Currency,
			Amount: e.Amount, AmountDecimal: dec, OccurredAt: e.OccurredAt.UTC(), RecordedAt: e.RecordedAt.UTC(),
			Position: positionJSON{Commit: e.Position.Commit, Prepare: e.Position.Prepare},
		}, []string{
			strconv.FormatInt(e.ID, 10), e.EventID.String(), strconv.Itoa(e.PostingIndex), e.StreamID,
			e.EventType, e.Provider, e.Account, e.Currency, strconv.FormatInt(e.Amount, 10), dec,
			formatTime(e.OccurredAt), formatTime(e.RecordedAt),
			strconv.FormatUint(e.Position.Commit, 10), strconv.FormatUint(e.Position.Prepare, 10),
		})
		if err != nil {
			break
		}
	}
	s.finishRows(w, r, out, err, map[string]any{"next_cursor": next})
}

type entryJSON struct {
	ID            int64        `json:"id"`
	EventID       string       `json:"event_id"`
	PostingIndex  int          `json:"posting_index"`
	StreamID      string       `json:"stream_id"`
	EventType     string       `json:"event_type"`
	Provider      string       `json:"provider"`
	Account       string       `json:"account"`
	Currency      string       `json:"currency"`
	Amount        int64        `json:"amount"`
	AmountDecimal string       `json:"amount_decimal"`
	OccurredAt    time.Time    `json:"occurred_at"`
	RecordedAt    time.Time    `json:"recorded_at"`
	Position      positionJSON `json:"position"`
}

type positionJSON struct {
	Commit  uint64 `json:"commit"`
	Prepare uint64 `json:"prepare"`
}

// GET /v1/reconciliation?status=open|resolved&kind=
func (s *server) queryReconciliation(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	f := views.ReconciliationFilter{Status: q.OneOf("status", "open", "resolved"), Kind: q.OneOf("kind", payment.ReconKinds()...)}
	store, ok := s.queryStore(w, r, q)
	if !ok {
		return
	}
	out := newRowWriter(w, format, "items", []string{
		"stream_id", "provider", "payment_id", "kind", "key", "status", "details", "opened_at", "resolved_at",
		"resolved_by", "note", "id",
	})
	err := store.Reconciliation(r.Context(), f, func(it views.ReconciliationItem) error {
		return out.row(reconJSON{
			ID: it.ID(), ResolvedBy: it.ResolvedBy, Note: it.Note,
			StreamID: it.StreamID, Provider: it.Provider, PaymentID: it.PaymentID, Kind: it.Kind, Key: it.Key,
			Status: it.Status, Details: it.Details, OpenedAt: timePtr(it.OpenedAt), ResolvedAt: timePtr(it.ResolvedAt),
		}, []string{
			it.StreamID, it.Provider, it.PaymentID, it.Kind, it.Key, it.Status, it.Details,
			formatTime(it.OpenedAt), formatTime(it.ResolvedAt), it.ResolvedBy, it.Note, it.ID(),
		})
	})
	s.finishRows(w, r, out, err, nil)
}

type reconJSON struct {
	// ID is what POST /v1/reconciliation/resolve|reopen take.
	ID         string     `json:"id"`
	StreamID   string     `json:"stream_id"`
	Provider   string     `json:"provider"`
	PaymentID  string     `json:"payment_id"`
	Kind       string     `json:"kind"`
	Key        string     `json:"key"`
	Status     string     `json:"status"`
	Details    string     `json:"details"`
	OpenedAt   *time.Time `json:"opened_at"`
	ResolvedAt *time.Time `json:"resolved_at"`
	ResolvedBy string     `json:"resolved_by,omitempty"`
	Note       string     `json:"note,omitempty"`
}

// GET /v1/projections
func (s *server) queryProjections(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return
	}
	if s.cfg.Projections == nil {
		s.queryError(w, r, errQueryNotConfigured)
		return
	}
	st, err := s.cfg.Projections.Projections(r.Context())
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	// JSON: the one shape of views.ProjectionStatus, as `onceledger
	// status --json` prints it.
	out := newRowWriter(w, format, "projections", []string{
		"name", "position", "position_commit", "lag", "status", "error", "updated_at",
	})
	for _, ps := range st.Projections {
		if err = out.row(ps, []string{
			ps.Name, strconv.FormatUint(ps.Position.Prepare, 10), strconv.FormatUint(ps.Position.Commit, 10),
			strconv.FormatInt(ps.Lag, 10), ps.Status, ps.LastError, formatTime(ps.UpdatedAt),
		}); err != nil {
			break
		}
	}
	s.finishRows(w, r, out, err, nil)
}

// GET /v1/payments/{provider}/{payment_id}: projections.PaymentHistory,
// the query the console's timeline makes too (the summary from the read
// model, folded from the events when the read model lags them).
func (s *server) queryPayment(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	store, ok := s.queryStore(w, r, q)
	if !ok {
		return
	}
	vars := mux.Vars(r)
	prov, id := vars["provider"], vars["payment_id"]
	h, found, err := projections.PaymentHistory(r.Context(), store, s.cfg.Events, prov, id)
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	if !found {
		s.queryError(w, r, fmt.Errorf("%w: payment %s/%s", errNotFound, prov, id))
		return
	}
	p, events := h.Payment, h.Events
	sum := p.Summary

	body := paymentJSON{
		Provider: p.Provider, PaymentID: p.PaymentID, StreamID: p.StreamID, Status: p.Status,
		Version: p.Version, Failed: sum.Failed, Canceled: sum.Canceled, UpdatedAt: p.UpdatedAt.UTC(), SubMerchant: sum.SubMerchant,
		Amounts: paymentAmounts{
			Authorized: sum.Authorized, Captured: sum.Captured, Refunded: sum.Refunded, Disputed: sum.DisputeOpen,
			Fees: sum.Fees, RefundPending: sum.RefundsPending, DisputeLost: sum.DisputeLost,
			FailedAttempt: sum.FailedAmount,
		},
		Events:         make([]paymentEventJSON, 0, len(events)),
		FeesByCurrency: make([]feeJSON, 0, len(h.Fees)),
	}
	for _, f := range h.Fees {
		body.FeesByCurrency = append(body.FeesByCurrency, feeJSON{
			Currency: f.Currency, Amount: f.Amount, AmountDecimal: money.FormatMinor(f.Amount, money.Currency(f.Currency)),
		})
	}
	body.paymentAmounts = body.Amounts
	if sum.Currency != "" {
		c := string(sum.Currency)
		body.Currency = &c
		body.AmountsDecimal = body.Amounts.decimal(sum.Currency)
	}
	for _, e := range events {
		data := json.RawMessage(e.Data)
		if !json.Valid(data) {
			data = json.RawMessage("null")
		}
		body.Events = append(body.Events, paymentEventJSON{Version: e.Version, Type: e.Type, RecordedAt: e.RecordedAt.UTC(), Data: data})
	}
	if format == formatJSON {
		writeJSON(w, http.StatusOK, body)
		return
	}
	// CSV: one row, the summary. The events are structured documents and
	// have no natural columns; they are in the JSON answer.
	header := []string{"provider", "payment_id", "stream_id", "status", "currency", "version"}
	rec := []string{p.Provider, p.PaymentID, p.StreamID, p.Status, string(sum.Currency), strconv.FormatUint(p.Version, 10)}
	for _, a := range body.Amounts.list() {
		dec := ""
		if sum.Currency != "" {
			dec = money.FormatMinor(a.v, sum.Currency)
		}
		header = append(header, a.name, a.name+"_decimal")
		rec = append(rec, strconv.FormatInt(a.v, 10), dec)
	}
	header = append(header, "failed", "canceled", "updated_at")
	rec = append(rec, strconv.FormatBool(sum.Failed), strconv.FormatBool(sum.Canceled), formatTime(p.UpdatedAt))
	var amounts []string
	for _, a := range body.Amounts.list() {
		amounts = append(amounts, a.name, a.name+"_decimal")
	}
	out := newRowWriter(w, formatCSV, "", header, amounts...)
	err = out.row(nil, rec)
	s.finishRows(w, r, out, err, nil)
}

type paymentJSON struct {
	Provider       string            `json:"provider"`
	PaymentID      string            `json:"payment_id"`
	StreamID       string            `json:"stream_id"`
	Status         string            `json:"status"`
	Currency       *string           `json:"currency"`
	Amounts        paymentAmounts    `json:"amounts"`
	AmountsDecimal map[string]string `json:"amounts_decimal,omitempty"`
	// The same amounts at the top level too ("captured": 1000), for clients
	// that read the contract's list of amounts as fields of the payment.
	paymentAmounts
	// FeesByCurrency is the payment's fees as its ledger entries carry
	// them (postings to expenses:fees:*), per currency: amounts.fees is
	// the one in the payment's currency, and a settlement report may post
	// a fee in its settlement currency.
	FeesByCurrency []feeJSON `json:"fees_by_currency"`
	// SubMerchant is the merchant a service provider took the payment for
	// (WeChat Pay sub_mchid); absent for a direct merchant's payment
	// (docs/reference.md).
	SubMerchant string             `json:"sub_merchant,omitempty"`
	Failed      bool               `json:"failed"`
	Canceled    bool               `json:"canceled"`
	Version     uint64             `json:"version"`
	UpdatedAt   time.Time          `json:"updated_at"`
	Events      []paymentEventJSON `json:"events"`
}

type feeJSON struct {
	Currency      string `json:"currency"`
	Amount        int64  `json:"amount"`
	AmountDecimal string `json:"amount_decimal"`
}

// paymentAmounts: disputed is the amount under an open dispute; a lost
// dispute moves it to dispute_lost. failed_attempt is the amount a failed
// attempt was for, when its provider said (it moves no money).
type paymentAmounts struct {
	Authorized    int64 `json:"authorized"`
	Captured      int64 `json:"captured"`
	Refunded      int64 `json:"refunded"`
	Disputed      int64 `json:"disputed"`
	Fees          int64 `json:"fees"`
	RefundPending int64 `json:"refund_pending"`
	DisputeLost   int64 `json:"dispute_lost"`
	FailedAttempt int64 `json:"failed_attempt"`
}

type namedAmount struct {
	name string
	v    int64
}

func (a paymentAmounts) list() []namedAmount {
	return []namedAmount{
		{"authorized", a.Authorized}, {"captured", a.Captured}, {"refunded", a.Refunded},
		{"disputed", a.Disputed}, {"fees", a.Fees}, {"refund_pending", a.RefundPending},
		{"dispute_lost", a.DisputeLost}, {"failed_attempt", a.FailedAttempt},
	}
}

func (a paymentAmounts) decimal(c money.Currency) map[string]string {
	m := map[string]string{}
	for _, x := range a.list() {
		m[x.name] = money.FormatMinor(x.v, c)
	}
	return m
}

type paymentEventJSON struct {
	Version    uint64          `json:"version"`
	Type       string          `json:"type"`
	RecordedAt time.Time       `json:"recorded_at"`
	Data       json.RawMessage `json:"data"`
}

// queryError answers an error that happened before any byte of the body.
func (s *server) queryError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusFor(err)
	if status >= 500 {
		s.log.Warn("query failed", "path", r.URL.Path, "error", err, "request_id", requestID(r.Context()))
		w.Header().Set("Retry-After", "5")
		err = errQueryUnavailable
	}
	writeError(w, status, err)
}

// finishRows ends a streamed answer. An error before the first byte is an
// ordinary error answer; after it, the status is gone, so the connection is
// aborted: the client sees a truncated answer (a failed read) rather than a
// well-formed one that silently lacks rows.
func (s *server) finishRows(w http.ResponseWriter, r *http.Request, out *rowWriter, err error, trailer map[string]any) {
	if err == nil {
		err = out.finish(trailer)
	}
	if err == nil {
		return
	}
	if !out.started {
		s.queryError(w, r, err)
		return
	}
	s.log.Warn("query aborted mid-answer", "path", r.URL.Path, "error", err, "request_id", requestID(r.Context()))
	panic(http.ErrAbortHandler)
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
