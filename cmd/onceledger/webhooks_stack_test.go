package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
	stripewebhook "github.com/stripe/stripe-go/v82/webhook"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
)

const (
	stripeSecret   = "whsec_test_secret_for_onceledger"
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	maxBody        = 64 << 10
)

// eventStoreKind selects where a stack keeps its events: the Postgres event
// store (inbox and append in one transaction) or EventStoreDB, played by the
// in-process gRPC test double esdbfake (inbox in Postgres, then the append).
type eventStoreKind string

const (
	onPostgres eventStoreKind = "postgres"
	onESDB     eventStoreKind = "esdb-fake"
)

// eachStore runs a matrix row against both event stores.
func eachStore(t *testing.T, row func(t *testing.T, s *stack)) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) { row(t, newStack(t, kind)) })
	}
}

// stack is the whole ingestion path on a real database behind a real socket.
type stack struct {
	t     *testing.T
	kind  eventStoreKind
	dbURL string
	fake  *esdbfake.Server // onESDB only
	app   *app.App
	pool  *pgxpool.Pool
	srv   *httptest.Server
	store eventstore.Store
}

func newStack(t *testing.T, kind eventStoreKind) *stack {
	t.Helper()
	var fake *esdbfake.Server
	if kind == onESDB {
		fake = esdbfake.Start(t)
	}
	return startStack(t, kind, pgtest.NewDatabase(t), fake)
}

// restart starts a new server on the same data (database and, for
// EventStoreDB, the same node): what a process restart sees.
func (s *stack) restart() *stack {
	s.srv.Close()
	s.app.Close()
	return startStack(s.t, s.kind, s.dbURL, s.fake)
}

func startStack(t *testing.T, kind eventStoreKind, dbURL string, fake *esdbfake.Server) *stack {
	t.Helper()
	return startStackWith(t, kind, dbURL, fake, -1)
}

// startCappedStack is a Postgres stack whose providers may have at most
// capPerProvider webhooks in flight.
func startCappedStack(t *testing.T, dbURL string, capPerProvider int) *stack {
	t.Helper()
	return startStackWith(t, onPostgres, dbURL, nil, capPerProvider)
}

func startStackWith(t *testing.T, kind eventStoreKind, dbURL string, fake *esdbfake.Server, capPerProvider int) *stack {
	t.Helper()
	st, err := stripe.New([]string{stripeSecret}, 5*time.Minute)
	require.NoError(t, err)
	sw, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	cfg := app.Config{
		DatabaseURL:   dbURL,
		Providers:     map[string]providers.Adapter{"stripe": st, "standard": sw},
		MaxBodyBytes:  maxBody,
		Logger:        testLogger(),
		IngestTimeout: 3 * time.Second,
		// -1: the concurrency tests send more than the production cap at once.
		ProviderConcurrency: capPerProvider,
	}
	if kind == onESDB {
		cfg.EventStore = fake.URL()
	}
	a := newApp(t, cfg)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return &stack{t: t, kind: kind, dbURL: dbURL, fake: fake, app: a, pool: a.Pool(), srv: srv, store: a.Events().Store}
}

// serveOnLoopback builds serve's app from cfg and serves it on a free
// loopback port, as serve does (its own listener, graceful shutdown);
// when the test ends the server must stop cleanly. It returns the app and
// its base URL.
func serveOnLoopback(t *testing.T, cfg app.Config) (*app.App, string) {
	t.Helper()
	a, err := app.New(context.Background(), cfg)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "graceful shutdown")
		a.Close()
	})
	return a, "http://" + l.Addr().String()
}

// newApp is serve's app built from cfg (its handler served by the caller),
// closed when the test ends.
func newApp(t *testing.T, cfg app.Config) *app.App {
	t.Helper()
	a, err := app.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a
}

type answer struct {
	Status int
	Body   string
}

func (a answer) outcome(t *testing.T) string {
	t.Helper()
	var v struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.Body), &v), "body %q", a.Body)
	return v.Status
}

func (s *stack) post(path string, header http.Header, body []byte) answer {
	return postTo(s.srv, path, header, body)
}

// postTo POSTs body with header (and a JSON content type) to srv over its
// real socket; a transport failure is answer{Status: -1}.
func postTo(srv *httptest.Server, path string, header http.Header, body []byte) answer {
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	return doRequest(srv, req)
}

func doRequest(srv *httptest.Server, req *http.Request) answer {
	resp, err := srv.Client().Do(req)
	if err != nil {
		return answer{Status: -1, Body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Body: string(b)}
}

// stripeDelivery signs body with stripe-go's own test signer.
func stripeDelivery(body []byte, at time.Time) http.Header {
	signed := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{
		Payload: body, Secret: stripeSecret, Timestamp: at,
	})
	return http.Header{"Stripe-Signature": {signed.Header}}
}

// standardDelivery signs body with the Standard Webhooks reference library.
func standardDelivery(t testing.TB, id string, body []byte, at time.Time) http.Header {
	wh, err := standardwebhooks.NewWebhook(standardSecret)
	require.NoError(t, err)
	sig, err := wh.Sign(id, at, body)
	require.NoError(t, err)
	return http.Header{
		"Webhook-Id":        {id},
		"Webhook-Timestamp": {strconv.FormatInt(at.Unix(), 10)},
		"Webhook-Signature": {sig},
	}
}

func (s *stack) sendStandard(id string, body []byte) answer {
	return s.post("/webhooks/standard", standardDelivery(s.t, id, body, time.Now()), body)
}

func (s *stack) sendStripe(body []byte) answer {
	return s.post("/webhooks/stripe", stripeDelivery(body, time.Now()), body)
}

var seq atomic.Int64

// uniq makes ids unique across tests and runs.
func uniq(prefix string) string {
	return fmt.Sprintf("%s_%d_%d", prefix, time.Now().UnixNano(), seq.Add(1))
}

func standardBody(typ string, data map[string]any) []byte {
	b, err := json.Marshal(map[string]any{"type": typ, "timestamp": time.Now().UTC().Format(time.RFC3339), "data": data})
	if err != nil {
		panic(err)
	}
	return b
}

// balances sums the postings of every stored event of the given streams,
// through the domain's rules: what the projections will show.
func (s *stack) balances(streams ...string) map[string]int64 {
	return streamBalances(s.t, s.store, streams...)
}

func (s *stack) streamTypes(stream string) []string { return streamTypes(s.t, s.store, stream) }

func (s *stack) scalar(q string, args ...any) int64 { return queryInt(s.t, s.pool, q, args...) }

// streamBalances sums the postings of every stored event of the streams, by
// account and currency; zero sums are left out.
func streamBalances(t *testing.T, store eventstore.Store, streams ...string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, stream := range streams {
		evs, err := store.ReadStream(context.Background(), stream)
		require.NoError(t, err)
		for _, r := range evs {
			e, err := payment.Decode(r.Type, r.Data)
			require.NoError(t, err)
			ps := payment.Postings(e)
			require.NoError(t, ledger.Check(ps))
			for _, p := range ps {
				out[p.Account+" "+string(p.Currency)] += p.Amount
			}
		}
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// streamTypes returns the stream's event types, asserting contiguous versions.
func streamTypes(t *testing.T, store eventstore.Store, stream string) []string {
	t.Helper()
	evs, err := store.ReadStream(context.Background(), stream)
	require.NoError(t, err)
	types := make([]string, 0, len(evs))
	for i, e := range evs {
		require.Equal(t, uint64(i), e.Version, "versions are contiguous from 0")
		types = append(types, e.Type)
	}
	return types
}

func queryInt(t *testing.T, pool *pgxpool.Pool, q string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

func queryText(t *testing.T, pool *pgxpool.Pool, q string, args ...any) string {
	t.Helper()
	var v string
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&v))
	return v
}

func (s *stack) inboxCount() int64 { return s.scalar(`SELECT count(*) FROM webhook_inbox`) }
func (s *stack) eventCount() int64 {
	if s.kind == onESDB {
		return int64(s.fake.EventCount())
	}
	return s.scalar(`SELECT count(*) FROM events`)
}

func (s *stack) scalarText(q string, args ...any) string { return queryText(s.t, s.pool, q, args...) }

// adminPool connects to the server's maintenance database, to act on the
// test database from outside it.
func (s *stack) adminPool() *pgxpool.Pool {
	s.t.Helper()
	cfg, err := pgxpool.ParseConfig(s.dbURL)
	require.NoError(s.t, err)
	cfg.ConnConfig.Database = "postgres"
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(s.t, err)
	s.t.Cleanup(func() {
		// Leave the database usable for pgtest's cleanup even if the test failed midway.
		_, _ = p.Exec(context.Background(), fmt.Sprintf(`ALTER DATABASE %q WITH ALLOW_CONNECTIONS true`, s.dbNameOrEmpty()))
		p.Close()
	})
	return p
}

func (s *stack) dbNameOrEmpty() string {
	cfg, err := pgxpool.ParseConfig(s.dbURL)
	if err != nil {
		return ""
	}
	return cfg.ConnConfig.Database
}

// testLogger keeps test output readable; go test -v shows the logs.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
