package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections/views"
)

// Provider balances (docs/reference.md, "Provider balances"): balance
// assertions stated by people, opening balances, adjustments (admin), and
// the assertions as the ledger compares them (read).

// BalanceActions records what people state and post (operations.Balances).
type BalanceActions interface {
	State(ctx context.Context, s assertion.Statement) (int, error)
	Open(ctx context.Context, c assertion.Opening) (assertion.Opened, error)
	Adjust(ctx context.Context, c assertion.Adjustment) (assertion.Adjusted, error)
}

// BalanceQuery reads the balance assertions (readmodel.Store).
type BalanceQuery interface {
	BalanceAssertions(ctx context.Context, f views.AssertionFilter) ([]views.BalanceAssertion, error)
}

var _ BalanceActions = (*operations.Balances)(nil)

func (s *server) registerBalances(v1 *mux.Router) {
	v1.HandleFunc("/balance-assertions", s.queryAssertions).Methods(http.MethodGet)
	v1.Handle("/balance-assertions", acting(s.postAssertion)).Methods(http.MethodPost)
	v1.Handle("/opening-balances", acting(s.postOpening)).Methods(http.MethodPost)
	v1.Handle("/adjustments", acting(s.postAdjustment)).Methods(http.MethodPost)
	v1.HandleFunc("/provider-days", s.queryProviderDays).Methods(http.MethodGet) // providerdays.go
}

// assertionJSON is one assertion as GET /v1/balance-assertions lists it.
type assertionJSON struct {
	ID         string    `json:"id"`
	Provider   string    `json:"provider"`
	Account    string    `json:"account"`
	Currency   string    `json:"currency"`
	AsOf       time.Time `json:"as_of"`
	Stated     int64     `json:"stated"`
	Ledger     int64     `json:"ledger"`
	Difference int64     `json:"difference"`
	Status     string    `json:"status"`
	Source     string    `json:"source"`
	Actor      string    `json:"actor,omitempty"`
	Note       string    `json:"note,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
}

// GET /v1/balance-assertions?provider=&status=&account=&currency=&from=&to=&limit=&after=
func (s *server) queryAssertions(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	format := q.format()
	f := views.AssertionFilter{Provider: q.Text("provider"), Account: q.Text("account"), Currency: q.Currency("currency"),
		Status: q.OneOf("status", views.AssertionAgreed, views.AssertionDiffers),
		From:   q.DayOrTime("from", s.cfg.ReportingZone), To: q.DayOrTime("to", s.cfg.ReportingZone),
		Limit: q.Limit(defaultPageSize, maxPageSize)}
	q.Range(f.From, f.To)
	if a := q.Get("after"); a != "" {
		k, err := decodeAssertionCursor(a)
		if err != nil {
			q.Fail("after: not a cursor this API gave")
		}
		f.After = k
	}
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return
	}
	if s.cfg.BalanceQuery == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	rows, err := s.cfg.BalanceQuery.BalanceAssertions(r.Context(), f)
	out := newRowWriter(w, format, "assertions", []string{"id", "provider", "account", "currency", "as_of", "stated", "ledger",
		"difference", "status", "source", "actor", "note", "recorded_at"}, "stated", "ledger", "difference")
	for i := 0; err == nil && i < len(rows); i++ {
		a := rows[i]
		j := assertionJSON{ID: a.StreamID + "/" + a.Key, Provider: a.Provider, Account: a.Account, Currency: a.Currency,
			AsOf: a.AsOf.UTC(), Stated: a.Stated, Ledger: a.Ledger, Difference: a.Difference(), Status: a.Status(),
			Source: a.Source, Actor: a.Actor, Note: a.Note, RecordedAt: a.RecordedAt.UTC()}
		err = out.row(j, []string{j.ID, j.Provider, j.Account, j.Currency, formatTime(j.AsOf), strconv.FormatInt(j.Stated, 10),
			strconv.FormatInt(j.Ledger, 10), strconv.FormatInt(j.Difference, 10), j.Status, j.Source, j.Actor, j.Note,
			formatTime(j.RecordedAt)})
	}
	var trailer map[string]any
	if len(rows) == f.Limit && len(rows) > 0 {
		trailer = map[string]any{"next": encodeAssertionCursor(rows[len(rows)-1].Position())}
	}
	s.finishRows(w, r, out, err, trailer)
}

func encodeAssertionCursor(k views.AssertionKey) string {
	b, _ := json.Marshal(k)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeAssertionCursor(s string) (*views.AssertionKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	var k views.AssertionKey
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

type assertionBody struct {
	Provider string          `json:"provider"`
	Account  string          `json:"account"`
	Currency string          `json:"currency"`
	AsOf     string          `json:"as_of"`
	Amount   json.RawMessage `json:"amount"`
	Source   string          `json:"source"`
	Note     string          `json:"note"`
}

// POST /v1/balance-assertions (admin): a balance stated by a person.
func (s *server) postAssertion(w http.ResponseWriter, r *http.Request) {
	var b assertionBody
	if err := decodeActionBody(w, r, &b); err != nil {
		fail(w, err)
		return
	}
	err := s.checkAccount("account", b.Account)
	c, asOf, amount, perr := parseMoneyFields(b.Currency, b.AsOf, b.Amount)
	if err == nil {
		err = perr
	}
	if err == nil {
		err = checkNote(b.Note, false)
	}
	if err != nil {
		fail(w, err)
		return
	}
	if s.cfg.Balances == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	p, _ := Principal(r.Context())
	key := "person-" + uuid.NewString()
	st := assertion.Statement{Provider: b.Provider, Account: b.Account, Currency: c, Source: strings.TrimSpace(b.Source),
		Actor: p.Actor, Note: strings.TrimSpace(b.Note), Points: []assertion.Point{{Key: key, AsOf: asOf, Amount: amount}}}
	if _, err := s.cfg.Balances.State(r.Context(), st); err != nil {
		s.actionError(w, r, err)
		return
	}
	provider, _ := assertion.ProviderOf(b.Account)
	writeJSON(w, http.StatusOK, map[string]any{"id": assertion.StreamID(b.Account, c) + "/" + key, "provider": provider,
		"account": b.Account, "currency": string(c), "as_of": asOf.UTC(), "stated": amount, "source": st.Source,
		"actor": p.Actor, "note": st.Note})
}

type openingBody struct {
	Account  string          `json:"account"`
	Currency string          `json:"currency"`
	AsOf     string          `json:"as_of"`
	Amount   json.RawMessage `json:"amount"`
	Note     string          `json:"note"`
}

// POST /v1/opening-balances (admin).
func (s *server) postOpening(w http.ResponseWriter, r *http.Request) {
	var b openingBody
	if err := decodeActionBody(w, r, &b); err != nil {
		fail(w, err)
		return
	}
	err := s.checkAccount("account", b.Account)
	c, asOf, amount, perr := parseMoneyFields(b.Currency, b.AsOf, b.Amount)
	if err == nil {
		err = perr
	}
	if err == nil {
		err = checkNote(b.Note, true)
	}
	if err != nil {
		fail(w, err)
		return
	}
	if s.cfg.Balances == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	p, _ := Principal(r.Context())
	o, err := s.cfg.Balances.Open(r.Context(), assertion.Opening{Account: b.Account, Currency: c, AsOf: asOf, Amount: amount,
		Actor: p.Actor, Note: strings.TrimSpace(b.Note)})
	if err != nil {
		s.actionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": o.ID.String(), "account": o.Account, "currency": string(o.Currency),
		"as_of": o.AsOf.UTC(), "amount": o.Amount, "counter_account": assertion.OpeningBalances, "actor": o.Actor, "note": o.Note})
}

type postingBody struct {
	Account  string          `json:"account"`
	Currency string          `json:"currency"`
	Amount   json.RawMessage `json:"amount"`
}

type adjustmentBody struct {
	ItemID      string        `json:"item_id"`
	Note        string        `json:"note"`
	EffectiveAt string        `json:"effective_at"`
	Postings    []postingBody `json:"postings"`
	Reverses    string        `json:"reverses"`
}

// POST /v1/adjustments (admin).
func (s *server) postAdjustment(w http.ResponseWriter, r *http.Request) {
	var b adjustmentBody
	if err := decodeActionBody(w, r, &b); err != nil {
		fail(w, err)
		return
	}
	cmd, err := parseAdjustment(b)
	for i := 0; err == nil && i < len(cmd.Postings); i++ {
		err = s.checkAccount(fmt.Sprintf("postings[%d].account", i), cmd.Postings[i].Account)
	}
	if err != nil {
		fail(w, err)
		return
	}
	if s.cfg.Balances == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	p, _ := Principal(r.Context())
	cmd.Actor = p.Actor
	a, err := s.cfg.Balances.Adjust(r.Context(), cmd)
	if err != nil {
		s.actionError(w, r, err)
		return
	}
	ps := make([]map[string]any, len(a.Postings))
	for i, x := range a.Postings {
		ps[i] = map[string]any{"account": x.Account, "currency": string(x.Currency), "amount": x.Amount}
	}
	out := map[string]any{"id": a.ID.String(), "item_id": a.ItemID, "effective_at": a.EffectiveAt.UTC(), "postings": ps,
		"actor": a.Actor, "note": a.Note}
	if a.Reverses != uuid.Nil {
		out["reverses"] = a.Reverses.String()
	}
	writeJSON(w, http.StatusOK, out)
}

func parseAdjustment(b adjustmentBody) (assertion.Adjustment, error) {
	cmd := assertion.Adjustment{ItemID: strings.TrimSpace(b.ItemID), Note: strings.TrimSpace(b.Note)}
	if cmd.ItemID == "" {
		return cmd, fmt.Errorf("%w: item_id: required (as GET /v1/reconciliation lists it)", errBadParameter)
	}
	if err := checkNote(b.Note, true); err != nil {
		return cmd, err
	}
	if b.EffectiveAt != "" {
		t, err := time.Parse(time.RFC3339Nano, b.EffectiveAt)
		if err != nil {
			return cmd, fmt.Errorf("%w: effective_at: not RFC 3339: %q", errBadParameter, b.EffectiveAt)
		}
		cmd.EffectiveAt = t
	}
	if b.Reverses != "" {
		id, err := uuid.Parse(b.Reverses)
		if err != nil {
			return cmd, fmt.Errorf("%w: reverses: not an adjustment id: %q", errBadParameter, b.Reverses)
		}
		cmd.Reverses = id
	}
	for i, p := range b.Postings {
		f := fmt.Sprintf("postings[%d].", i)
		c, err := money.ParseCurrency(p.Currency)
		if err != nil {
			return cmd, fmt.Errorf("%w: %scurrency: %q is not an ISO 4217 currency with minor units", errBadParameter, f, p.Currency)
		}
		amount, err := parseAmount(f+"amount", p.Amount, c)
		if err != nil {
			return cmd, err
		}
		cmd.Postings = append(cmd.Postings, ledger.Posting{Account: p.Account, Currency: c, Amount: amount})
	}
	if len(cmd.Postings) == 0 && cmd.Reverses == uuid.Nil {
		return cmd, fmt.Errorf("%w: postings: required (balanced per currency)", errBadParameter)
	}
	return cmd, nil
}

// parseMoneyFields parses the currency, as_of and amount of a body, each
// error naming its field.
func parseMoneyFields(currency, asOf string, amount json.RawMessage) (money.Currency, time.Time, int64, error) {
	c, err := money.ParseCurrency(currency)
	if err != nil {
		return "", time.Time{}, 0, fmt.Errorf("%w: currency: %q is not an ISO 4217 currency with minor units", errBadParameter, currency)
	}
	t, err := time.Parse(time.RFC3339Nano, asOf)
	if err != nil {
		return "", time.Time{}, 0, fmt.Errorf("%w: as_of: required, RFC 3339: %q", errBadParameter, asOf)
	}
	a, err := parseAmount("amount", amount, c)
	return c, t, a, err
}

// parseAmount reads an amount: a JSON integer in minor units, or a JSON
// string in major units ("1234.56"); more decimals than the currency has
// are refused, never rounded.
func parseAmount(field string, raw json.RawMessage, c money.Currency) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, fmt.Errorf("%w: %s: required (integer minor units)", errBadParameter, field)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("%w: %s: %v", errBadParameter, field, err)
		}
		a, err := money.ParseMajor(s, c)
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %v (%s has %d decimals)", errBadParameter, field, err, c, c.Exponent())
		}
		return a, nil
	}
	a, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %s is not an integer in minor units of %s (a decimal amount goes in a string, with at most %d decimals)",
			errBadParameter, field, raw, c, c.Exponent())
	}
	return a, nil
}

func checkNote(note string, required bool) error {
	n := strings.TrimSpace(note)
	switch {
	case required && n == "":
		return fmt.Errorf("%w: note: required: say why", errBadParameter)
	case utf8.RuneCountInString(n) > MaxNote:
		return fmt.Errorf("%w: note: longer than %d characters", errBadParameter, MaxNote)
	}
	return nil
}

// ZonedImporter imports a report whose dates are in a zone the file does
// not state (Stripe's balance summary: the report run's timezone), given
// as POST /v1/settlements/{provider}?timezone=Area/City.
type ZonedImporter interface {
	ImportReportIn(ctx context.Context, provider string, src ReportSource, zone *time.Location) (ImportSummary, error)
}

func (s *server) importIn(r *http.Request, src ReportSource) (ImportSummary, error) {
	provider := mux.Vars(r)["provider"]
	tz := r.URL.Query().Get("timezone")
	if tz == "" {
		return s.cfg.Settlements.ImportReport(r.Context(), provider, src)
	}
	zone, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return ImportSummary{}, fmt.Errorf("%w: timezone: %q is not an IANA time zone", errBadParameter, tz)
	}
	zi, ok := s.cfg.Settlements.(ZonedImporter)
	if !ok {
		return ImportSummary{}, fmt.Errorf("%w: timezone: this server imports reports in UTC only", errBadParameter)
	}
	return zi.ImportReportIn(r.Context(), provider, src, zone)
}

// checkAccount refuses an account that names a provider this build does
// not have (provider:nobody:balance): an unknown account is 400, nothing
// recorded. Without the registry's answer (Config.Unconfigured nil), every
// provider name the chart's pattern allows passes.
func (s *server) checkAccount(field, account string) error {
	var p string
	switch parts := strings.Split(account, ":"); {
	case len(parts) == 3 && parts[0] == "provider":
		p = parts[1]
	case len(parts) == 3 && (parts[0] == "expenses" && (parts[1] == "fees" || parts[1] == "discounts") ||
		parts[0] == "receivable" && parts[1] == "disputes"):
		p = parts[2]
	default:
		return nil
	}
	if _, ok := s.cfg.Providers[p]; ok || s.cfg.Unconfigured == nil {
		return nil
	}
	if _, known := s.cfg.Unconfigured(p); known {
		return nil
	}
	return fmt.Errorf("%w: %s: %q names no provider of this ledger (%q)", errBadParameter, field, account, p)
}
