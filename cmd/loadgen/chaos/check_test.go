package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
)

// openPool connects the test itself to serve's database (read-only use:
// the tests observe, they never fix anything up).
func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err, "connect %s", url)
	require.NoError(t, pool.Ping(ctx), "connect")
	t.Cleanup(pool.Close)
	return pool
}

// checkInbox proves that no acknowledged delivery was lost: every webhook-id
// that got a 2xx is in webhook_inbox with status applied. With all set,
// every delivery of w must be there, and nothing else.
func checkInbox(ctx context.Context, t *testing.T, pool *pgxpool.Pool, w *workload, acked map[string]bool, all bool) {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT dedup_key, status FROM webhook_inbox WHERE provider = $1`, provider)
	require.NoError(t, err, "read webhook_inbox")
	type keyStatus struct{ Key, Status string }
	inbox, err := pgx.CollectRows(rows, pgx.RowToStructByPos[keyStatus])
	require.NoError(t, err, "read webhook_inbox")
	status := map[string]string{}
	for _, r := range inbox {
		status[r.Key] = r.Status
	}
	known := map[string]bool{}
	var problems []string
	for _, d := range w.all {
		known[d.id] = true
		if !acked[d.id] && !all {
			continue
		}
		switch s, ok := status[d.id]; {
		case !ok && acked[d.id]:
			problems = append(problems, fmt.Sprintf("%s (%s): acknowledged with 2xx but not in webhook_inbox", d.id, d.typ))
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (%s): not in webhook_inbox", d.id, d.typ))
		case s != "applied":
			problems = append(problems, fmt.Sprintf("%s (%s): webhook_inbox status %q, want applied", d.id, d.typ, s))
		}
	}
	for k := range status {
		if !known[k] {
			problems = append(problems, fmt.Sprintf("%s: in webhook_inbox but never sent", k))
		}
	}
	var conflicts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_conflicts`).Scan(&conflicts), "count webhook_conflicts")
	if conflicts != 0 {
		problems = append(problems, fmt.Sprintf("%d webhook_conflicts rows: redeliveries were byte-identical", conflicts))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		assert.Fail(t, fmt.Sprintf("inbox: %d problems", len(problems)), firstOf(problems))
	}
}

// firstOf lists the first 30 of many findings, one a line, for a failure
// message that stays readable.
func firstOf(findings []string) string {
	shown := findings[:min(len(findings), 30)]
	return fmt.Sprintf("first %d:\n  %s", len(shown), strings.Join(shown, "\n  "))
}

// balanceRow is one (account, currency, amount) row of a read model.
type balanceRow struct {
	Account, Currency string
	Amount            int64
}

// collectLedger folds (account, currency, amount) rows into a ledger.
func collectLedger(rows pgx.Rows) (*model.Ledger, error) {
	bs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[balanceRow])
	if err != nil {
		return nil, err
	}
	l := model.New()
	for _, b := range bs {
		if err := l.Add(model.Key{Account: b.Account, Currency: b.Currency}, b.Amount); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// sqlLedger reads account_balances and the entry count.
func sqlLedger(ctx context.Context, pool *pgxpool.Pool) (*model.Ledger, int, error) {
	rows, err := pool.Query(ctx, `SELECT account, currency, balance FROM account_balances`)
	if err != nil {
		return nil, 0, err
	}
	l, err := collectLedger(rows)
	if err != nil {
		return nil, 0, err
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries`).Scan(&n); err != nil {
		return nil, 0, err
	}
	return l, n, nil
}

// entriesLedger sums ledger_entries per account and currency.
func entriesLedger(ctx context.Context, pool *pgxpool.Pool) (*model.Ledger, error) {
	rows, err := pool.Query(ctx, `SELECT account, currency, sum(amount)::bigint FROM ledger_entries GROUP BY 1, 2`)
	if err != nil {
		return nil, err
	}
	return collectLedger(rows)
}

func formatDiff(ds []model.Difference) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %-4s %16s %16s %16s\n", "account", "cur", "expected", "actual", "actual-expected")
	for _, d := range ds {
		fmt.Fprintf(&b, "%-32s %-4s %16d %16d %16d\n", d.Account, d.Currency, d.Expected, d.Actual, d.Actual-d.Expected)
	}
	return b.String()
}

// checkLedger waits (bounded) for the projections to reach the model, then
// proves the read models equal it exactly: account_balances, the number of
// ledger_entries, the entries' sums, and /v1/balances. It also requires every
// projection to report lag 0.
func checkLedger(ctx context.Context, t *testing.T, pool *pgxpool.Pool, srv *server, w *workload, limit time.Duration) {
	t.Helper()
	var last []model.Difference
	var lastN int
	err := eventually(ctx, limit, 100*time.Millisecond, func() error {
		actual, n, err := sqlLedger(ctx, pool)
		if err != nil {
			return err
		}
		last, lastN = model.Diff(w.expected, actual), n
		if len(last) > 0 || n != w.entries {
			return errors.New("read models differ from the model")
		}
		return nil
	})
	require.NoError(t, err, "after %v: ledger_entries rows %d, model %d; account_balances vs model (%d differences):\n%s",
		limit, lastN, w.entries, len(last), formatDiff(last))
	sums, err := entriesLedger(ctx, pool)
	require.NoError(t, err)
	d := model.Diff(w.expected, sums)
	assert.Empty(t, d, "ledger_entries sums differ from the model:\n%s", formatDiff(d))
	api, err := apiBalances(ctx, srv)
	if assert.NoError(t, err, "/v1/balances") {
		d := model.Diff(w.expected, api)
		assert.Empty(t, d, "/v1/balances differs from the model:\n%s", formatDiff(d))
	}
	assert.NoError(t, eventually(ctx, 10*time.Second, 100*time.Millisecond, func() error { return projectionsLive(ctx, srv) }), "/v1/projections")
	assert.Empty(t, w.expected.Unbalanced(), "model itself unbalanced")
}

func apiGet(ctx context.Context, srv *server, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url(path), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+srv.sec.apiToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func apiBalances(ctx context.Context, srv *server) (*model.Ledger, error) {
	var v struct {
		Balances []struct {
			Account  string `json:"account"`
			Currency string `json:"currency"`
			Balance  int64  `json:"balance"`
		} `json:"balances"`
	}
	if err := apiGet(ctx, srv, "/v1/balances", &v); err != nil {
		return nil, err
	}
	l := model.New()
	for _, b := range v.Balances {
		if err := l.Add(model.Key{Account: b.Account, Currency: b.Currency}, b.Balance); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func projectionsLive(ctx context.Context, srv *server) error {
	var v struct {
		Projections []struct {
			Name   string `json:"name"`
			Lag    int64  `json:"lag"`
			Status string `json:"status"`
		} `json:"projections"`
	}
	if err := apiGet(ctx, srv, "/v1/projections", &v); err != nil {
		return err
	}
	if len(v.Projections) == 0 {
		return errors.New("no projections reported")
	}
	var behind []string
	for _, p := range v.Projections {
		if p.Lag != 0 || p.Status != "live" {
			behind = append(behind, fmt.Sprintf("%s lag %d status %q", p.Name, p.Lag, p.Status))
		}
	}
	if len(behind) > 0 {
		return fmt.Errorf("not caught up: %s", strings.Join(behind, "; "))
	}
	return nil
}

// countRows returns the rows of webhook_inbox and events, for the scenarios
// that must leave nothing behind.
func countRows(ctx context.Context, t *testing.T, pool *pgxpool.Pool) (inbox, events int) {
	t.Helper()
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_inbox), (SELECT count(*) FROM events)`).Scan(&inbox, &events), "count rows")
	return inbox, events
}
