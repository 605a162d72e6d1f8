package main

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/scenario"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/sign"
)

// drain hands out every first delivery of q, in order, as one sender would.
func drain(q *queue) []*scenario.Delivery {
	var out []*scenario.Delivery
	for {
		j, ok := q.Next()
		if !ok {
			return out
		}
		if j.kind == kindFirst {
			out = append(out, j.d)
		}
		q.Done(nil)
	}
}

// TestPregeneratedRunIsTheSameRun: the payments generated (and signed)
// before the clock are the ones the run would have generated on the fly,
// handed out in the same order, with the same expected ledger; and every
// delivery carries its signature headers.
func TestPregeneratedRunIsTheSameRun(t *testing.T) {
	cfg := scenario.Config{Providers: []string{"stripe", "standard"}, RunID: "p", Seed: 5, Duplicates: 0.5, Conflicts: 0.1}
	genA, err := scenario.New(cfg)
	require.NoError(t, err)
	genB, err := scenario.New(cfg)
	require.NoError(t, err)
	std, err := sign.NewStandard(testStandardSecret)
	require.NoError(t, err)
	s := &sender{stripeSecret: "whsec_test", standard: std}

	fly := newQueue(genA, 9, 8, 200, time.Time{})
	pre := newQueue(genB, 9, 8, 200, time.Time{})
	require.NoError(t, pre.Pregenerate(200, 0, s.presign))
	a, b := drain(fly), drain(pre)
	require.Len(t, b, len(a))
	for i := range a {
		assert.Equal(t, a[i].ID, b[i].ID, i)
		assert.Equal(t, a[i].Body, b[i].Body, i)
		require.NotNil(t, b[i].Signed, "%s is signed", b[i].ID)
		assert.Equal(t, b[i].Conflict != nil, b[i].ConflictSigned != nil, b[i].ID)
	}
	assert.Equal(t, fly.expected, pre.expected)
	assert.Equal(t, fly.planned, pre.planned)
}

// TestPregenerateForARateAndDuration: an open-ended run at a rate for a
// duration generates at least what it will send.
func TestPregenerateForARateAndDuration(t *testing.T) {
	gen, err := scenario.New(scenario.Config{Providers: []string{"standard"}, RunID: "r", Seed: 7, Duplicates: 0.2})
	require.NoError(t, err)
	std, err := sign.NewStandard(testStandardSecret)
	require.NoError(t, err)
	s := &sender{stripeSecret: "whsec_test", standard: std}
	q := newQueue(gen, 7, 8, 0, time.Time{})
	require.NoError(t, q.Pregenerate(0, 500, s.presign))
	n := 0
	for _, lcs := range q.pending {
		for _, lc := range lcs {
			for _, d := range lc.Deliveries {
				n += 1 + d.Copies
				if d.Twin {
					n++
				}
				if d.Conflict != nil {
					n++
				}
			}
		}
	}
	assert.GreaterOrEqual(t, n, 500)
}

// TestFirstAttemptsSendTheirPresignedHeaders: a first attempt sends the
// headers signed before the run while they are fresh, and signs afresh
// once they are older than the server's replay window allows.
func TestFirstAttemptsSendTheirPresignedHeaders(t *testing.T) {
	std, err := sign.NewStandard(testStandardSecret)
	require.NoError(t, err)
	s := &sender{base: "http://127.0.0.1:1", stripeSecret: "whsec_test", standard: std}
	d := &scenario.Delivery{Provider: scenario.Stripe, ID: "evt_1", Body: []byte(`{"id":"evt_1"}`)}
	require.NoError(t, s.presign(d))
	ctx := context.Background()
	later := time.Now().Add(time.Hour)

	req, err := s.requestSigned(ctx, d, d.Body, later, d.Signed)
	require.NoError(t, err)
	assert.Equal(t, d.Signed.Get("Stripe-Signature"), req.Header.Get("Stripe-Signature"), "fresh: sent as signed")

	d.SignedAt = time.Now().Add(-presignMaxAge)
	req, err = s.requestSigned(ctx, d, d.Body, later, d.Signed)
	require.NoError(t, err)
	assert.Equal(t, sign.Stripe("whsec_test", later, d.Body), req.Header.Get("Stripe-Signature"), "stale: signed again")

	// Twins send one header map at once: read-only, so no race.
	var wg sync.WaitGroup
	d.SignedAt = time.Now()
	for range 4 {
		wg.Go(func() {
			r, err := s.requestSigned(ctx, d, d.Body, later, d.Signed)
			assert.NoError(t, err)
			_ = r.Header.Clone()
			_ = r.Write(&discard{})
		})
	}
	wg.Wait()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestPresignedRunMatches: a whole run on presigned deliveries is verified
// by the server (the fake checks each Standard Webhooks signature) and ends
// with the ledger equal to the model.
func TestPresignedRunMatches(t *testing.T) {
	fake := newFake(t)
	fake.fail503 = 0.1
	srv := httptest.NewServer(fake)
	defer srv.Close()
	o := testOptions(srv.URL)
	o.Presign = true
	s, code, stderr := runJSON(t, o)
	require.True(t, code == 0 && s.Verdict == "MATCH", "exit %d, verdict %s: %s", code, s.Verdict, stderr)
	assert.Contains(t, stderr, "400 payments generated and signed before the run")
	assert.Equal(t, int64(s.Planned.total()), s.Delivered)
	assert.Positive(t, s.SendCPUSeconds)
}
