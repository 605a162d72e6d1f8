package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

const inspectStream = "payment-stripe-pi_inspect"

// sampleEvents are a capture with a fee, a refund, a reconciliation flag
// and one event of a type this build does not know.
func sampleEvents(t *testing.T) []eventstore.EventData {
	t.Helper()
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	meta := func(dedup string) payment.Meta {
		return payment.Meta{Provider: "stripe", PaymentKey: "pi_inspect", DedupKey: dedup, OccurredAt: at}
	}
	domain := []payment.Event{
		payment.Captured{Meta: meta("evt_1"), CaptureID: "ch_1", Amount: 1000, Fee: 59, Currency: money.Currency("USD")},
		payment.RefundPosted{Meta: meta("evt_2"), RefundID: "re_1", Amount: 250, Currency: money.Currency("USD")},
		payment.Flagged{Meta: meta("evt_3"), Kind: payment.ReconOverRefund, Key: "re_9", Details: "refunds exceed capture"},
	}
	providerTypes := []string{"charge.succeeded", "charge.refunded", "charge.refunded"}
	var out []eventstore.EventData
	for i, e := range domain {
		typ, data, err := payment.Encode(e)
		require.NoError(t, err)
		m := e.Metadata()
		md, err := json.Marshal(map[string]string{"provider": m.Provider, "dedup_key": m.DedupKey, "provider_type": providerTypes[i]})
		require.NoError(t, err)
		out = append(out, eventstore.EventData{ID: payment.EventID(m.Provider, m.DedupKey, 0), Type: typ, Data: data, Metadata: md})
	}
	out = append(out, eventstore.EventData{
		ID: payment.EventID("stripe", "evt_4", 0), Type: "payment.teleported", Data: []byte(`{"to":"mars"}`),
	})
	return out
}

func appendSample(t *testing.T, store eventstore.Store) {
	t.Helper()
	_, err := store.Append(context.Background(), inspectStream, eventstore.NoStream, sampleEvents(t))
	require.NoError(t, err)
}

func TestInspectText(t *testing.T) {
	store := postgres.NewEventStore(pgtest.NewPool(t))
	appendSample(t, store)

	var out bytes.Buffer
	require.NoError(t, inspect(context.Background(), store, inspectStream, false, &out))
	text := out.String()
	t.Log("\n" + text)

	assert.True(t, strings.HasPrefix(text, "stream "+inspectStream+": 4 events\n"), "header")
	// In version order, each with its UTC recording time and type.
	i0 := strings.Index(text, "\n#0  ")
	i1 := strings.Index(text, "\n#1  ")
	i2 := strings.Index(text, "\n#2  ")
	i3 := strings.Index(text, "\n#3  ")
	require.True(t, i0 >= 0 && i0 < i1 && i1 < i2 && i2 < i3, "versions in order: %d %d %d %d", i0, i1, i2, i3)
	assert.Regexp(t, `\n#0  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z  payment\.captured\n`, text)
	assert.Regexp(t, `\n#1  \S+Z  refund\.posted\n`, text)

	capture := text[i0:i1]
	assert.Regexp(t, `capture_id +ch_1\n`, capture)
	assert.Regexp(t, `amount +1000 \(10\.00 USD\)\n`, capture)
	assert.Regexp(t, `fee +59 \(0\.59 USD\)\n`, capture)
	assert.Regexp(t, `occurred_at +2024-05-01T12:00:00Z\n`, capture)
	assert.Regexp(t, `metadata +provider=stripe dedup_key=evt_1 provider_type=charge\.succeeded\n`, capture)
	assert.Regexp(t, `provider:stripe:balance +USD +\+9\.41  \(941\)\n`, capture)
	assert.Regexp(t, `expenses:fees:stripe +USD +\+0\.59  \(59\)\n`, capture)
	assert.Regexp(t, `revenue:sales +USD +-10\.00  \(-1000\)\n`, capture)

	refund := text[i1:i2]
	assert.Regexp(t, `amount +250 \(2\.50 USD\)\n`, refund)
	assert.Regexp(t, `revenue:refunds +USD +\+2\.50  \(250\)\n`, refund)
	assert.Regexp(t, `provider:stripe:balance +USD +-2\.50  \(-250\)\n`, refund)

	flag := text[i2:i3]
	assert.Regexp(t, `kind +over_refund\n`, flag)
	assert.Regexp(t, `postings +\(none\)\n`, flag)

	unknown := text[i3:]
	assert.Regexp(t, `undecodable +unknown event type`, unknown)
	assert.Regexp(t, `data +\{"to": ?"mars"\}\n`, unknown) // jsonb may respace it
	assert.Regexp(t, `metadata +\(none\)\n`, unknown)
}

func TestInspectJSON(t *testing.T) {
	store := postgres.NewEventStore(pgtest.NewPool(t))
	appendSample(t, store)

	var out bytes.Buffer
	require.NoError(t, inspect(context.Background(), store, inspectStream, true, &out))
	var got []struct {
		Stream     string          `json:"stream"`
		Version    uint64          `json:"version"`
		EventID    string          `json:"event_id"`
		RecordedAt time.Time       `json:"recorded_at"`
		Type       string          `json:"type"`
		Data       json.RawMessage `json:"data"`
		Amounts    []amountView    `json:"amounts"`
		Postings   []postingView   `json:"postings"`
		Metadata   *metadataView   `json:"metadata"`
		DecodeErr  string          `json:"decode_error"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	require.Len(t, got, 4)
	for i, e := range got {
		assert.Equal(t, uint64(i), e.Version)
		assert.Equal(t, inspectStream, e.Stream)
		assert.Equal(t, time.UTC, e.RecordedAt.Location(), "recorded_at in UTC")
		assert.WithinDuration(t, time.Now(), e.RecordedAt, time.Hour)
	}
	c := got[0]
	assert.Equal(t, payment.TypeCaptured, c.Type)
	assert.Equal(t, payment.EventID("stripe", "evt_1", 0).String(), c.EventID)
	assert.Equal(t, []amountView{
		{Field: "amount", Minor: 1000, Decimal: "10.00", Currency: "USD"},
		{Field: "fee", Minor: 59, Decimal: "0.59", Currency: "USD"},
	}, c.Amounts)
	assert.Equal(t, []postingView{
		{Account: "provider:stripe:balance", Currency: "USD", Minor: 941, Decimal: "+9.41"},
		{Account: "expenses:fees:stripe", Currency: "USD", Minor: 59, Decimal: "+0.59"},
		{Account: "revenue:sales", Currency: "USD", Minor: -1000, Decimal: "-10.00"},
	}, c.Postings)
	require.NotNil(t, c.Metadata)
	assert.Equal(t, metadataView{Provider: "stripe", DedupKey: "evt_1", ProviderType: "charge.succeeded"}, *c.Metadata)
	var body map[string]any
	require.NoError(t, json.Unmarshal(c.Data, &body))
	assert.Equal(t, "ch_1", body["capture_id"])

	assert.Equal(t, payment.TypeFlagged, got[2].Type)
	assert.Empty(t, got[2].Postings)
	assert.NotNil(t, got[2].Postings, "postings is [] rather than null")

	assert.Equal(t, "payment.teleported", got[3].Type)
	assert.Contains(t, got[3].DecodeErr, "unknown event type")
	assert.JSONEq(t, `{"to":"mars"}`, string(got[3].Data))
	assert.Nil(t, got[3].Metadata)
}

func TestInspectEmptyStream(t *testing.T) {
	store := postgres.NewEventStore(pgtest.NewPool(t))
	var out bytes.Buffer
	err := inspect(context.Background(), store, "payment-stripe-nope", false, &out)
	require.ErrorIs(t, err, errEmptyStream)
	assert.Equal(t, "stream payment-stripe-nope has no events", err.Error())
	assert.Equal(t, 1, exitCode(err))
	assert.Empty(t, out.String(), "nothing on stdout")
}

// TestInspectRun goes through the command as main runs it: configuration,
// pool, event store selection.
func TestInspectRun(t *testing.T) {
	url := pgtest.NewDatabase(t)
	g := &globals{
		ctx: context.Background(),
		log: slog.New(slog.DiscardHandler),
		cli: &cli{DatabaseURL: url, EventStore: "postgres"},
	}
	err := (&inspectCmd{Stream: "payment-stripe-missing"}).Run(g)
	require.ErrorIs(t, err, errEmptyStream)
	assert.Contains(t, err.Error(), "stream payment-stripe-missing has no events")

	g.cli.EventStore = "mongodb://x"
	err = (&inspectCmd{Stream: "payment-stripe-missing"}).Run(g)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ONCELEDGER_EVENT_STORE")
}

// TestInspectKurrentDBScheme opens a kurrentdb:// setting (which the v4
// client cannot parse; openEventStore translates it) against the in-process
// fake node and inspects what was appended through it.
func TestInspectKurrentDBScheme(t *testing.T) {
	srv := esdbfake.Start(t)
	setting := "kurrentdb://" + srv.Addr() + "?tls=false"
	store, closeStore, isPG, err := openEventStore(context.Background(), setting, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeStore() })
	assert.False(t, isPG)
	assert.IsType(t, &esdb.Store{}, store)
	appendSample(t, store)
	assert.Equal(t, 4, srv.EventCount())

	var out bytes.Buffer
	require.NoError(t, inspect(context.Background(), store, inspectStream, false, &out))
	assert.True(t, strings.HasPrefix(out.String(), "stream "+inspectStream+": 4 events\n"))
	assert.Regexp(t, `fee +59 \(0\.59 USD\)\n`, out.String())
}

func TestOpenEventStore(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)

	for _, s := range []string{"postgres", "", " Postgres "} {
		store, closeStore, isPG, err := openEventStore(ctx, s, pool)
		require.NoError(t, err, "%q", s)
		assert.True(t, isPG, "%q", s)
		assert.IsType(t, &postgres.EventStore{}, store)
		assert.NoError(t, closeStore())
	}
	_, _, _, err := openEventStore(ctx, "postgres", nil)
	assert.ErrorContains(t, err, "ONCELEDGER_DATABASE_URL")

	for _, s := range []string{
		"esdb://127.0.0.1:2113?tls=false",
		"esdb+discover://cluster.example:2113",
		"kurrentdb://127.0.0.1:2113?tls=false",
		"KurrentDB+Discover://a:2113,b:2113,c:2113",
	} {
		store, closeStore, isPG, err := openEventStore(ctx, s, nil)
		require.NoError(t, err, "%q", s)
		assert.False(t, isPG)
		assert.IsType(t, &esdb.Store{}, store)
		assert.NoError(t, closeStore())
	}

	for _, tc := range []struct{ setting, want string }{
		{"mysql", `want "postgres" or an esdb://`},
		{"tcp://127.0.0.1:1113", `unsupported scheme "tcp"`},
		{"postgres://u:hunter2@db/x", "the database is ONCELEDGER_DATABASE_URL"},
		{"esdb://", "no host"},
		{"kurrentdb://?tls=false", "no host"},
		{"esdb://127.0.0.1:2113?tls=maybe", "ONCELEDGER_EVENT_STORE"},
	} {
		_, _, _, err := openEventStore(ctx, tc.setting, pool)
		require.Error(t, err, "%q", tc.setting)
		assert.Contains(t, err.Error(), "ONCELEDGER_EVENT_STORE", "%q", tc.setting)
		assert.Contains(t, err.Error(), tc.want, "%q", tc.setting)
		assert.NotContains(t, err.Error(), "hunter2", "password leaked")
	}
}

func TestRedactSetting(t *testing.T) {
	assert.Equal(t, `"esdb://admin:xxxxx@h:2113?tls=true"`, redactSetting("esdb://admin:changeit@h:2113?tls=true"))
	assert.Equal(t, `"postgres"`, redactSetting("postgres"))
	assert.Equal(t, `"esdb://admin:xxxxx@a:1,b:2"`, redactSetting("esdb://admin:changeit@a:1,b:2"))
	assert.Equal(t, "<redacted>", redactSetting("esdb://admin:chan%zzgeit@h"), "unparsable with credentials")
}

// The start-up log's event_store is quoted once, by the handler, not twice.
func TestLogSettingQuotedOnce(t *testing.T) {
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("serving",
		"event_store", app.LogSetting("postgres"), "esdb", app.LogSetting("esdb://admin:changeit@h:2113?tls=true"))
	assert.Contains(t, buf.String(), " event_store=postgres ")
	assert.Contains(t, buf.String(), ` esdb="esdb://admin:xxxxx@h:2113?tls=true"`)
	assert.Equal(t, "<redacted>", app.LogSetting("esdb://admin:chan%zzgeit@h"))
}
