package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/projections/views"
)

// ExpectedActions registers and cancels expected payments, each an event
// of the expectation's own stream (operations.Expectations).
type ExpectedActions interface {
	Register(ctx context.Context, c expectation.RegisterCommand) (expectation.Expectation, bool, error)
	Cancel(ctx context.Context, id uuid.UUID, actor, note string) (expectation.Expectation, error)
}

// ExpectedQuery lists expected payments (readmodel.Store).
type ExpectedQuery interface {
	ExpectedPayments(ctx context.Context, f views.ExpectedPaymentFilter, fn func(views.ExpectedPayment) error) error
}

var _ ExpectedActions = (*operations.Expectations)(nil)

// registerExpected mounts /v1/expected-payments (query.go).
func (s *server) registerExpected(v1 *mux.Router) {
	v1.Handle("/expected-payments", expecting(s.registerExpectation)).Methods(http.MethodPost)
	v1.Handle("/expected-payments/{id}/cancel", expecting(s.cancelExpectation)).Methods(http.MethodPost)
	v1.HandleFunc("/expected-payments", s.queryExpected).Methods(http.MethodGet)
}

// expecting wraps the two writer endpoints: a writer token (the merchant's
// order service) or an admin token; a read token gets 403.
func expecting(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := Principal(r.Context()); !ok || !p.CanExpect() {
			fail(w, fmt.Errorf("%w: registering expected payments needs a writer or admin token (ONCELEDGER_WRITER_TOKENS, ONCELEDGER_ADMIN_TOKENS)", errForbidden))
			return
		}
		next(w, r)
	})
}

// expectationJSON is the answer of the three endpoints.
type expectationJSON struct {
	ID          uuid.UUID  `json:"id"`
	Provider    string     `json:"provider"`
	Reference   string     `json:"reference"`
	Amount      int64      `json:"amount"`
	Currency    string     `json:"currency"`
	ExpiresAt   time.Time  `json:"expires_at"`
	Status      string     `json:"status"`
	Late        bool       `json:"late,omitempty"`
	CaptureID   string     `json:"capture_id,omitempty"`
	PaidAmount  *int64     `json:"paid_amount,omitempty"`
	PaidAt      *time.Time `json:"paid_at,omitempty"`
	NextQueryAt *time.Time `json:"next_query_at,omitempty"`
}

func expectationOut(x expectation.Expectation) expectationJSON {
	out := expectationJSON{ID: x.ID, Provider: x.Provider, Reference: x.Reference, Amount: x.Amount,
		Currency: string(x.Currency), ExpiresAt: x.ExpiresAt.UTC(), Status: string(x.Status), Late: x.Late, CaptureID: x.CaptureID}
	if x.Status == expectation.StatusPaid {
		out.PaidAmount, out.PaidAt = &x.PaidAmount, timePtr(x.PaidAt)
	}
	return out
}

type registerBody struct {
	Provider  *string          `json:"provider"`
	Reference *string          `json:"reference"`
	Amount    *json.RawMessage `json:"amount"`
	Currency  *string          `json:"currency"`
	ExpiresAt *string          `json:"expires_at"`
}

// POST /v1/expected-payments (writer or admin). The first registration
// and the same body again answer 200 with the same id; another amount or
// currency under the reference is 409; a malformed body is 400 naming the
// field, and records nothing.
func (s *server) registerExpectation(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Expected == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	var body registerBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	cmd, err := body.command()
	if err != nil {
		fail(w, err)
		return
	}
	p, _ := Principal(r.Context())
	cmd.Actor, cmd.Now = p.Actor, s.cfg.Now()
	x, _, err := s.cfg.Expected.Register(r.Context(), cmd)
	if err != nil {
		s.actionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, expectationOut(x))
}

func (b registerBody) command() (expectation.RegisterCommand, error) {
	bad := func(field, why string) error {
		return fmt.Errorf("%w: %s: %s", expectation.ErrInvalid, field, why)
	}
	var c expectation.RegisterCommand
	switch {
	case b.Provider == nil:
		return c, bad("provider", "required")
	case b.Reference == nil:
		return c, bad("reference", "required")
	case b.Amount == nil:
		return c, bad("amount", "required")
	case b.Currency == nil:
		return c, bad("currency", "required")
	case b.ExpiresAt == nil:
		return c, bad("expires_at", "required (RFC 3339)")
	}
	// An integer in minor units: "10.00", 10.5 and 1e3 are refused rather
	// than read as something else.
	raw := strings.TrimSpace(string(*b.Amount))
	if err := json.Unmarshal([]byte(raw), &c.Amount); err != nil || strings.ContainsAny(raw, ".eE\"") {
		return c, bad("amount", fmt.Sprintf("%s: want an integer in minor units", raw))
	}
	t, err := time.Parse(time.RFC3339, *b.ExpiresAt)
	if err != nil {
		return c, bad("expires_at", fmt.Sprintf("%q: want RFC 3339", *b.ExpiresAt))
	}
	c.Provider, c.Reference, c.Currency, c.ExpiresAt = *b.Provider, *b.Reference, *b.Currency, t
	return c, nil
}

type cancelBody struct {
	Note string `json:"note"`
}

// POST /v1/expected-payments/{id}/cancel (writer or admin), body optional
// {"note"}. Canceling a canceled one answers it again; a paid one is 409.
func (s *server) cancelExpectation(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Expected == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	id, err := uuid.Parse(mux.Vars(r)["id"])
	if err != nil {
		fail(w, fmt.Errorf("%w: no expected payment %q", errNotFound, mux.Vars(r)["id"]))
		return
	}
	var body cancelBody
	if err := decodeActionBody(w, r, &body); err != nil {
		fail(w, err)
		return
	}
	if utf8.RuneCountInString(body.Note) > MaxNote {
		fail(w, fmt.Errorf("%w: note is longer than %d characters", errBadParameter, MaxNote))
		return
	}
	p, _ := Principal(r.Context())
	x, err := s.cfg.Expected.Cancel(r.Context(), id, p.Actor, strings.TrimSpace(body.Note))
	if errors.Is(err, expectation.ErrNotFound) {
		err = fmt.Errorf("%w: %w", errNotFound, err)
	}
	if err != nil {
		s.actionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, expectationOut(x))
}

// GET /v1/expected-payments?status=&provider=&limit=&cursor=&format=:
// newest registration first, paged by keyset (next_cursor, and the
// Next-Cursor header).
func (s *server) queryExpected(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	statuses := make([]string, 0, 5)
	for _, st := range expectation.Statuses() {
		statuses = append(statuses, string(st))
	}
	limit := q.Limit(defaultPageSize, maxPageSize)
	f := views.ExpectedPaymentFilter{Status: q.OneOf("status", statuses...), Provider: q.OneOf("provider", expectation.Providers()...),
		Limit: limit + 1}
	after, err := decodeExpectedCursor(q.Get("cursor"))
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	f.After = after
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return
	}
	if s.cfg.ExpectedQuery == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	page := make([]views.ExpectedPayment, 0, min(f.Limit, 128))
	if err := s.cfg.ExpectedQuery.ExpectedPayments(r.Context(), f, func(e views.ExpectedPayment) error {
		page = append(page, e)
		return nil
	}); err != nil {
		s.queryError(w, r, err)
		return
	}
	next := ""
	if len(page) > limit {
		page = page[:limit]
		last := page[len(page)-1]
		next = encodeExpectedCursor(views.ExpectedPaymentKey{RegisteredAt: last.RegisteredAt, ID: last.ID})
		w.Header().Set("Next-Cursor", next)
	}
	out := newRowWriter(w, format, "expected_payments", []string{
		"id", "provider", "reference", "amount", "currency", "expires_at", "status", "late", "capture_id", "paid_amount",
		"paid_at", "next_query_at",
	})
	for _, e := range page {
		if err = s.expectedRow(out, e); err != nil {
			break
		}
	}
	s.finishRows(w, r, out, err, map[string]any{"next_cursor": next})
}

// expectedRow writes one expected payment, JSON or CSV.
func (s *server) expectedRow(out *rowWriter, e views.ExpectedPayment) error {
	j := expectationJSON{ID: e.ID, Provider: e.Provider, Reference: e.Reference, Amount: e.Amount, Currency: e.Currency,
		ExpiresAt: e.ExpiresAt, Status: e.Status, Late: e.Late, CaptureID: e.CaptureID, PaidAt: timePtr(e.PaidAt),
		NextQueryAt: timePtr(e.NextQueryAt)}
	paid := ""
	if e.Status == string(expectation.StatusPaid) {
		j.PaidAmount = &e.PaidAmount
		paid = fmt.Sprint(e.PaidAmount)
	}
	return out.row(j, []string{e.ID.String(), e.Provider, e.Reference, fmt.Sprint(e.Amount), e.Currency,
		formatTime(e.ExpiresAt), e.Status, fmt.Sprint(e.Late), e.CaptureID, paid, formatTime(e.PaidAt), formatTime(e.NextQueryAt)})
}

// expectedCursor is a page's position: the last row's registration time
// and id, with a checksum so that a cursor this API did not hand out is a
// 400, not a silently wrong page.
type expectedCursor struct {
	V  int       `json:"v"`
	At time.Time `json:"at"`
	ID uuid.UUID `json:"id"`
}

func encodeExpectedCursor(k views.ExpectedPaymentKey) string {
	b, _ := json.Marshal(expectedCursor{V: 1, At: k.RegisteredAt.UTC(), ID: k.ID})
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:cursorSumLen]...))
}

func decodeExpectedCursor(s string) (*views.ExpectedPaymentKey, error) {
	if s == "" {
		return nil, nil
	}
	bad := fmt.Errorf("%w: cursor: not a cursor this API handed out", errBadParameter)
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) <= cursorSumLen {
		return nil, bad
	}
	doc, sum := raw[:len(raw)-cursorSumLen], raw[len(raw)-cursorSumLen:]
	want := sha256.Sum256(doc)
	var c expectedCursor
	if !bytes.Equal(sum, want[:cursorSumLen]) || json.Unmarshal(doc, &c) != nil || c.V != 1 {
		return nil, bad
	}
	return &views.ExpectedPaymentKey{RegisteredAt: c.At, ID: c.ID}, nil
}
