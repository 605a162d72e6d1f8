package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/stats"
)

// api reads the server's query API (/v1, bearer token).
type api struct {
	base   string
	token  string
	client *http.Client
}

func (a *api) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d: %.200s", path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// balances reads GET /v1/balances into a ledger.
func (a *api) balances(ctx context.Context) (*model.Ledger, int, error) {
	var out struct {
		Balances []struct {
			Account  string `json:"account"`
			Currency string `json:"currency"`
			Balance  int64  `json:"balance"`
		} `json:"balances"`
	}
	if err := a.get(ctx, "/v1/balances", &out); err != nil {
		return nil, 0, err
	}
	l := model.New()
	for _, b := range out.Balances {
		if err := l.Add(model.Key{Account: b.Account, Currency: b.Currency}, b.Balance); err != nil {
			return nil, 0, err
		}
	}
	return l, len(out.Balances), nil
}

type projection struct {
	Name     string `json:"name"`
	Position uint64 `json:"position"`
	Lag      int64  `json:"lag"`
	Status   string `json:"status"`
	Error    string `json:"error"`
}

func (a *api) projections(ctx context.Context) ([]projection, error) {
	var out struct {
		Projections []projection `json:"projections"`
	}
	if err := a.get(ctx, "/v1/projections", &out); err != nil {
		return nil, err
	}
	return out.Projections, nil
}

// lagSample is one poll of one projection.
type lagSample struct {
	at  time.Time
	pos uint64
	lag int64
}

// lagTracker keeps the projections' polls, during the load and the
// catch-up, to report the lag in events and (approximately) in seconds.
type lagTracker struct {
	mu     sync.Mutex
	series map[string][]lagSample
	polls  [][]lagSample // per poll, its samples (for the max over projections)
	load   int           // polls taken while loading (the rest: catch-up)
	until  time.Time     // time of the last poll while loading
}

func newLagTracker() *lagTracker { return &lagTracker{series: map[string][]lagSample{}} }

func (t *lagTracker) add(at time.Time, ps []projection, loading bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var poll []lagSample
	for _, p := range ps {
		s := lagSample{at: at, pos: p.Position, lag: p.Lag}
		t.series[p.Name] = append(t.series[p.Name], s)
		poll = append(poll, s)
	}
	t.polls = append(t.polls, poll)
	if loading {
		t.load, t.until = len(t.polls), at
	}
}

// sample polls while ctx lives.
func (t *lagTracker) sample(ctx context.Context, a *api, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if ps, err := a.projections(ctx); err == nil {
				t.add(time.Now(), ps, true)
			}
		}
	}
}

// lagReport: the lag in events is what /v1/projections says (the worst
// projection at each poll, during the load). The lag in seconds is
// estimated: for a poll at t where a projection is at position p with lag
// n, the head was about p+n; the time until a later poll shows the
// projection at or past p+n is how long that head took to be projected. It
// is an estimate at the poll interval's resolution, slightly optimistic
// when the feed has gaps (rolled-back appends consume positions).
type lagReport struct {
	Polls        int     `json:"polls"`
	EventsP50    int64   `json:"events_p50"`
	EventsP99    int64   `json:"events_p99"`
	EventsMax    int64   `json:"events_max"`
	SecondsP50   float64 `json:"seconds_p50"`
	SecondsP99   float64 `json:"seconds_p99"`
	SecondsMax   float64 `json:"seconds_max"`
	SecondsKnown int     `json:"seconds_samples"`
}

func (t *lagTracker) report() lagReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	var r lagReport
	var worst []int64
	for _, poll := range t.polls[:t.load] {
		var m int64
		for _, s := range poll {
			m = max(m, s.lag)
		}
		worst = append(worst, m)
	}
	r.Polls = len(worst)
	if len(worst) > 0 {
		slices.Sort(worst)
		r.EventsP50, r.EventsP99, r.EventsMax = stats.Percentile(worst, 50), stats.Percentile(worst, 99), worst[len(worst)-1]
	}
	if t.load == 0 {
		return r
	}
	var secs []float64
	for _, series := range t.series {
		for i, s := range series {
			if s.at.After(t.until) {
				break // only polls taken during the load are measured
			}
			if s.lag == 0 {
				secs = append(secs, 0)
				continue
			}
			target := s.pos + uint64(s.lag)
			for _, later := range series[i+1:] {
				if later.pos >= target {
					secs = append(secs, later.at.Sub(s.at).Seconds())
					break
				}
			}
		}
	}
	r.SecondsKnown = len(secs)
	if len(secs) > 0 {
		slices.Sort(secs)
		r.SecondsP50, r.SecondsP99, r.SecondsMax = stats.Percentile(secs, 50), stats.Percentile(secs, 99), secs[len(secs)-1]
	}
	return r
}

// waitCaughtUp polls until every projection has lag 0 and the same
// positions twice in a row, or the timeout.
func waitCaughtUp(ctx context.Context, a *api, timeout time.Duration, t *lagTracker) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	var prev []projection
	var lastErr error
	for {
		ps, err := a.projections(ctx)
		if err == nil {
			if t != nil {
				t.add(time.Now(), ps, false)
			}
			if caughtUp(ps) && samePositions(ps, prev) {
				return time.Since(start), nil
			}
			prev = ps
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr != nil && prev == nil {
				return time.Since(start), lastErr
			}
			return time.Since(start), fmt.Errorf("projections not caught up after %v: %s", timeout, describe(prev))
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return time.Since(start), ctx.Err()
		}
	}
}

func caughtUp(ps []projection) bool {
	for _, p := range ps {
		if p.Lag != 0 {
			return false
		}
	}
	return len(ps) > 0
}

func samePositions(a, b []projection) bool {
	if len(a) != len(b) {
		return false
	}
	pos := map[string]uint64{}
	for _, p := range b {
		pos[p.Name] = p.Position
	}
	for _, p := range a {
		if q, ok := pos[p.Name]; !ok || q != p.Position {
			return false
		}
	}
	return true
}

func describe(ps []projection) string {
	if len(ps) == 0 {
		return "no projections reported"
	}
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s at %d lag %d %s", p.Name, p.Position, p.Lag, p.Status)
		if p.Error != "" {
			s += " (" + p.Error + ")"
		}
	}
	return s
}

func sortStrings(s []string) { slices.Sort(s) }
