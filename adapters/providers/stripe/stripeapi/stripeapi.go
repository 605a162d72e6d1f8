// Package stripeapi is the Stripe API client for completeness, for users
// whose webhooks were down: it lists balance transactions (by payout or
// since a time) as settlement lines, payouts, and events since a time as
// raw JSON to normalize like their webhooks (stripe.NormalizeEvent, dedup key
// the event id). It speaks the documented list protocol: limit,
// starting_after, has_more; a 429 is retried after its Retry-After, a
// bounded number of times, each wait bounded too.
//
// Hand-written on net/http rather than stripe-go: the backfill needs each
// event's bytes as Stripe rendered them (stripe-go decodes into structs and
// keeps only the page's raw bytes), the balance transactions go through the
// same mapping as the report importer (stripe.ParseBalanceTransaction), and
// stripe-go retries 429s on its own schedule without honouring Retry-After.
// Three GET endpoints do not need a client library.
package stripeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/money"
)

// DefaultBase is the API base (ONCELEDGER_STRIPE_API_BASE's default).
const DefaultBase = "https://api.stripe.com"

// pageSize is Stripe's maximum limit per list request.
const pageSize = 100

// ErrRateLimited is wrapped when Stripe still answers 429 after the last
// retry.
var ErrRateLimited = errors.New("stripe api: rate limited")

// APIError is a non-2xx answer other than a retried 429.
type APIError struct {
	Status  int
	Type    string // Stripe's error type ("invalid_request_error" …)
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("stripe api: %d %s: %s", e.Status, e.Type, e.Message)
}

// Client lists Stripe objects. Safe for concurrent use.
type Client struct {
	base *url.URL
	key  string
	http *http.Client
	// MaxRetries is how many times a 429 is retried (default 5).
	MaxRetries int
	// MaxWait bounds one wait, whatever Retry-After says (default 30s).
	MaxWait time.Duration
	// Sleep waits for d or until ctx is done; tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// New returns a client for the API at base (DefaultBase when "") with the
// secret key. hc may be nil (http.DefaultClient's transport, 60s timeout).
func New(base, key string, hc *http.Client) (*Client, error) {
	if base == "" {
		base = DefaultBase
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("stripe api: base %q is not an http(s) URL", base)
	}
	if key == "" {
		return nil, errors.New("stripe api: no secret key (ONCELEDGER_STRIPE_API_KEY)")
	}
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{base: u, key: key, http: hc, MaxRetries: 5, MaxWait: 30 * time.Second, Sleep: sleep}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// get fetches one page, retrying 429s.
func (c *Client) get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = q.Encode()
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+c.key)
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, fmt.Errorf("stripe api: GET %s: %w", path, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("stripe api: GET %s: %w", path, err)
		}
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			if attempt >= c.MaxRetries {
				return nil, fmt.Errorf("%w: GET %s still answers 429 after %d retries", ErrRateLimited, path, attempt)
			}
			if err := c.Sleep(ctx, c.wait(resp.Header.Get("Retry-After"), attempt)); err != nil {
				return nil, err
			}
			continue
		case resp.StatusCode/100 != 2:
			e := &APIError{Status: resp.StatusCode}
			var w struct {
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(body, &w) == nil {
				e.Type, e.Message = w.Error.Type, w.Error.Message
			}
			return nil, e
		}
		return body, nil
	}
}

// wait is how long to wait before retry attempt+1: Retry-After (seconds or
// an HTTP date) when given, else exponential from 1s; at most MaxWait.
func (c *Client) wait(retryAfter string, attempt int) time.Duration {
	d := time.Second << min(attempt, 10)
	if s := strings.TrimSpace(retryAfter); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			d = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			d = time.Until(t)
		}
	}
	if d < 0 {
		d = 0
	}
	if c.MaxWait > 0 && d > c.MaxWait {
		d = c.MaxWait
	}
	return d
}

// page is one list response: its elements raw and whether more follow.
type page struct {
	HasMore bool              `json:"has_more"`
	Data    []json.RawMessage `json:"data"`
}

// list walks a list endpoint page by page, calling fn on each element.
func (c *Client) list(ctx context.Context, path string, q url.Values, fn func(raw json.RawMessage) error) error {
	q.Set("limit", strconv.Itoa(pageSize))
	for {
		body, err := c.get(ctx, path, q)
		if err != nil {
			return err
		}
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			return fmt.Errorf("stripe api: GET %s: not a list: %w", path, err)
		}
		last := ""
		for _, raw := range p.Data {
			var o struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(raw, &o); err != nil || o.ID == "" {
				return fmt.Errorf("stripe api: GET %s: an element without an id", path)
			}
			if err := fn(raw); err != nil {
				return err
			}
			last = o.ID
		}
		if !p.HasMore || last == "" {
			return nil
		}
		q.Set("starting_after", last)
	}
}

// BalanceQuery selects balance transactions: those paid out in Payout
// (automatic payouts only: "only returns transactions that were paid out on
// the specified payout ID"), or, without Payout, those created at or after
// Since.
type BalanceQuery struct {
	Payout string
	Since  time.Time
}

// BalanceTransactions lists balance transactions as settlement lines,
// mapped as the report importer maps them (stripe.ParseBalanceTransaction:
// same dedup key txn_…, same ids), sources expanded so that each line names
// its payment. Lines listed by payout carry that payout id.
func (c *Client) BalanceTransactions(ctx context.Context, bq BalanceQuery, fn report.Func) error {
	q := url.Values{"expand[]": {"data.source"}}
	if bq.Payout != "" {
		q.Set("payout", bq.Payout)
	} else if !bq.Since.IsZero() {
		q.Set("created[gte]", strconv.FormatInt(bq.Since.Unix(), 10))
	}
	opt := report.Options{PayoutID: bq.Payout}
	return c.list(ctx, "/v1/balance_transactions", q, func(raw json.RawMessage) error {
		l, err := stripe.ParseBalanceTransaction(raw, opt)
		if err != nil {
			return fmt.Errorf("stripe api: balance transaction: %w", err)
		}
		return fn(report.Record{Line: l, Raw: raw})
	})
}

// Payout is what the client reads of a Payout object.
type Payout struct {
	ID          string
	Amount      int64 // ISO 4217 minor units
	Currency    money.Currency
	Status      string // paid, pending, in_transit, canceled, failed
	Automatic   bool   // only automatic payouts list their balance transactions
	ArrivalDate time.Time
	Created     time.Time
	Raw         []byte
}

// Payouts lists payouts created at or after since (all when zero).
func (c *Client) Payouts(ctx context.Context, since time.Time, fn func(Payout) error) error {
	q := url.Values{}
	if !since.IsZero() {
		q.Set("created[gte]", strconv.FormatInt(since.Unix(), 10))
	}
	return c.list(ctx, "/v1/payouts", q, func(raw json.RawMessage) error {
		var w struct {
			ID          string      `json:"id"`
			Amount      json.Number `json:"amount"`
			Currency    string      `json:"currency"`
			Status      string      `json:"status"`
			Automatic   bool        `json:"automatic"`
			ArrivalDate int64       `json:"arrival_date"`
			Created     int64       `json:"created"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return fmt.Errorf("stripe api: payout: %w", err)
		}
		cur, err := money.ParseCurrency(w.Currency)
		if err != nil {
			return fmt.Errorf("stripe api: payout %s: %w", w.ID, err)
		}
		amount, err := stripe.MinorFromAPI(string(w.Amount), cur)
		if err != nil {
			return fmt.Errorf("stripe api: payout %s: %w", w.ID, err)
		}
		return fn(Payout{ID: w.ID, Amount: amount, Currency: cur, Status: w.Status, Automatic: w.Automatic,
			ArrivalDate: time.Unix(w.ArrivalDate, 0).UTC(), Created: time.Unix(w.Created, 0).UTC(), Raw: raw})
	})
}

// Events lists events created at or after since, newest first as Stripe
// lists them (the ledger does not depend on order), calling fn with each
// event's id and its bytes as received, to be normalized by
// stripe.NormalizeEvent. Stripe keeps events for 30 days.
func (c *Client) Events(ctx context.Context, since time.Time, fn func(id string, raw []byte) error) error {
	q := url.Values{}
	if !since.IsZero() {
		q.Set("created[gte]", strconv.FormatInt(since.Unix(), 10))
	}
	return c.list(ctx, "/v1/events", q, func(raw json.RawMessage) error {
		var o struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(raw, &o)
		return fn(o.ID, raw)
	})
}

// SyncPayouts is what `onceledger settle sync stripe` does: for each paid
// automatic payout created at or after since (or just payoutID when given),
// list its balance transactions as lines. The payout's own line comes with
// them (a payout balance transaction), so the payout is proven by its lines.
func (c *Client) SyncPayouts(ctx context.Context, payoutID string, since time.Time, fn report.Func) error {
	if payoutID != "" {
		return c.BalanceTransactions(ctx, BalanceQuery{Payout: payoutID}, fn)
	}
	var ids []string
	if err := c.Payouts(ctx, since, func(p Payout) error {
		if p.Automatic && p.Status == "paid" {
			ids = append(ids, p.ID)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if err := c.BalanceTransactions(ctx, BalanceQuery{Payout: id}, fn); err != nil {
			return err
		}
	}
	return nil
}
