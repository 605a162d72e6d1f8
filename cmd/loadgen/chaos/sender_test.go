package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
	"github.com/onceledger/onceledger/cmd/loadgen/internal/sign"
)

const provider = "standard"

// delivery is one webhook as a provider would send it, again and again until
// acknowledged: same webhook-id, same bytes.
type delivery struct {
	id   string // webhook-id: the dedup key
	typ  string
	body []byte
	fact *model.Fact // what it posts once; nil when nothing (authorization, failure, a fact reported twice)
}

// workload is a run's deliveries and the ledger they must produce.
type workload struct {
	seqs     [][]*delivery // one payment's deliveries in natural order; a payout alone
	all      []*delivery
	expected *model.Ledger
	entries  int // ledger_entries rows the facts post
}

var currencies = []string{"USD", "EUR", "JPY", "GBP"}

// newWorkload generates payments (authorize, capture, refund, disputes,
// failures, the same capture reported under a second webhook-id) and payouts,
// and computes the expected ledger with the load generator's independent
// model.
func newWorkload(t *testing.T, seed uint64, payments int) *workload {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	run := fmt.Sprintf("%x", seed&0xffffffff)
	w := &workload{expected: model.New()}
	occurred := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	n := 0
	add := func(seq []*delivery, typ string, data map[string]any, f *model.Fact) []*delivery {
		n++
		body, err := json.Marshal(map[string]any{
			"type":      typ,
			"timestamp": occurred.Add(time.Duration(n) * time.Second).Format(time.RFC3339),
			"data":      data,
		})
		require.NoError(t, err)
		d := &delivery{id: fmt.Sprintf("msg_chaos_%s_%06d", run, n), typ: typ, body: body, fact: f}
		if f != nil {
			require.NoError(t, w.expected.Apply(*f), "model")
			ps, _ := model.Postings(*f)
			w.entries += len(ps)
		}
		w.all = append(w.all, d)
		return append(seq, d)
	}
	fact := func(k model.Kind, cur string, amount, fee int64) *model.Fact {
		return &model.Fact{Provider: provider, Kind: k, Currency: cur, Amount: amount, Fee: fee}
	}
	for i := 0; i < payments; i++ {
		pid := fmt.Sprintf("pay_%s_%05d", run, i)
		cur := currencies[rng.IntN(len(currencies))]
		amount := 100 + rng.Int64N(99_900)
		var seq []*delivery
		if rng.IntN(100) < 40 {
			seq = add(seq, "payment.authorized", map[string]any{"payment_id": pid, "amount": amount, "currency": cur}, nil)
		}
		if rng.IntN(100) < 5 {
			seq = add(seq, "payment.failed", map[string]any{"payment_id": pid}, nil)
			w.seqs = append(w.seqs, seq)
			continue
		}
		fee := amount*29/1000 + 30 // always > 0: a capture posts three entries
		capture := map[string]any{"payment_id": pid, "capture_id": "cap_" + pid, "amount": amount, "currency": cur, "fee": fee}
		seq = add(seq, "payment.captured", capture, fact(model.Capture, cur, amount, fee))
		if rng.IntN(100) < 8 {
			// The same capture under another webhook-id: one business fact.
			seq = add(seq, "payment.captured", capture, nil)
		}
		switch r := rng.IntN(100); {
		case r < 30:
			refund := 1 + rng.Int64N(amount)
			seq = add(seq, "refund.succeeded", map[string]any{"payment_id": pid, "refund_id": "re_" + pid, "amount": refund, "currency": cur},
				fact(model.Refund, cur, refund, 0))
		case r < 45:
			disputed := 1 + rng.Int64N(amount)
			dispute := map[string]any{"payment_id": pid, "dispute_id": "du_" + pid, "amount": disputed, "currency": cur}
			seq = add(seq, "dispute.opened", dispute, fact(model.DisputeOpened, cur, disputed, 0))
			switch rng.IntN(5) {
			case 0, 1:
				seq = add(seq, "dispute.won", dispute, fact(model.DisputeWon, cur, disputed, 0))
			case 2, 3:
				seq = add(seq, "dispute.lost", dispute, fact(model.DisputeLost, cur, disputed, 0))
			}
		}
		w.seqs = append(w.seqs, seq)
		if i%25 == 24 {
			po := 1000 + rng.Int64N(1_000_000)
			w.seqs = append(w.seqs, add(nil, "payout.paid",
				map[string]any{"payout_id": fmt.Sprintf("po_%s_%05d", run, i), "amount": po, "currency": cur},
				fact(model.Payout, cur, po, 0)))
		}
	}
	// Interleave payments so concurrent workers hit different streams.
	rng.Shuffle(len(w.seqs), func(i, j int) { w.seqs[i], w.seqs[j] = w.seqs[j], w.seqs[i] })
	return w
}

// answer is what one POST got: status 0 is a transport error.
type answer struct {
	target int // index of the server it was sent to (one-server runs: 0)
	status int
	result string // "accepted", "duplicate", "ignored" on 2xx
	err    error
}

// sender posts deliveries and remembers which were acknowledged. allowed
// says which statuses the scenario tolerates besides 200; anything else is
// recorded as a violation. With several servers (behind no balancer: the
// sender is its own), attempts go round-robin, so a retry lands on the next
// server.
type sender struct {
	bases   []string
	next    atomic.Uint64
	signer  *sign.Standard
	client  *http.Client
	allowed func(a answer) bool
	// twins is the share of deliveries whose first send goes to two servers
	// at the same instant: the inbox's primary key decides across processes.
	twins float64

	mu         sync.Mutex
	acked      map[string]bool
	counts     map[int]int
	violations []string
	// recordedUnanswered counts first acknowledgements that said
	// "duplicate": an earlier attempt was recorded but its answer was lost.
	recordedUnanswered int
}

func newSender(t *testing.T, srv *server, workers int, allowed func(answer) bool) *sender {
	t.Helper()
	return newClusterSender(t, []*server{srv}, workers, allowed)
}

// newClusterSender spreads its attempts over srvs (which share secrets).
func newClusterSender(t *testing.T, srvs []*server, workers int, allowed func(answer) bool) *sender {
	t.Helper()
	signer, err := sign.NewStandard(srvs[0].sec.standard)
	require.NoError(t, err)
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConns:        workers * 2,
		MaxIdleConnsPerHost: workers * 2,
		IdleConnTimeout:     30 * time.Second,
	}
	t.Cleanup(tr.CloseIdleConnections)
	var bases []string
	for _, srv := range srvs {
		bases = append(bases, srv.url("/webhooks/"+provider))
	}
	return &sender{
		bases:   bases,
		signer:  signer,
		client:  &http.Client{Transport: tr, Timeout: 30 * time.Second},
		allowed: allowed,
		acked:   map[string]bool{},
		counts:  map[int]int{},
	}
}

// pick is the next server, round-robin.
func (s *sender) pick() int { return int((s.next.Add(1) - 1) % uint64(len(s.bases))) }

// post sends d once to server i, signed now (the timestamp is part of the
// signature; the body bytes never change).
func (s *sender) post(ctx context.Context, i int, d *delivery) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.bases[i], bytes.NewReader(d.body))
	if err != nil {
		return answer{target: i, err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	s.signer.Headers(req.Header, d.id, time.Now(), d.body)
	resp, err := s.client.Do(req)
	if err != nil {
		return answer{target: i, err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	a := answer{target: i, status: resp.StatusCode}
	if resp.StatusCode/100 == 2 {
		var v struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			a.result = "unparsable: " + string(b)
		} else {
			a.result = v.Status
		}
	} else {
		a.result = strings.TrimSpace(string(b))
	}
	return a
}

// attempt posts d once and books the answer; it reports acknowledgement.
func (s *sender) attempt(ctx context.Context, d *delivery) bool {
	a := s.post(ctx, s.pick(), d)
	if ctx.Err() != nil && a.err != nil {
		return false // the test is ending; not the server's answer
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.book(d, a)
}

// twin posts d to two different servers at the same instant and books both
// answers; it reports acknowledgement. A first arrival is booked first: the
// two answers race back, and the "duplicate" may arrive before the
// "accepted" it depends on.
func (s *sender) twin(ctx context.Context, d *delivery) bool {
	i := s.pick()
	j := (i + 1) % len(s.bases)
	var other answer
	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { <-start; other = s.post(ctx, j, d) })
	close(start)
	a := s.post(ctx, i, d)
	wg.Wait()
	if ctx.Err() != nil && (a.err != nil || other.err != nil) {
		return false
	}
	if other.result == "accepted" {
		a, other = other, a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.book(d, a)
	return s.book(d, other) || ok
}

// book records one answer to d (under s.mu) and reports acknowledgement.
func (s *sender) book(d *delivery, a answer) bool {
	s.counts[a.status]++
	wasAcked := s.acked[d.id]
	switch {
	case a.status == http.StatusOK && (a.result == "accepted" || a.result == "duplicate"):
		if wasAcked && a.result != "duplicate" {
			s.violations = append(s.violations, fmt.Sprintf("%s (%s) was acknowledged before, yet a redelivery answered %q: the first 2xx was not durable", d.id, d.typ, a.result))
		}
		if !wasAcked && a.result == "duplicate" {
			// Recorded by an attempt whose answer was lost (a crash between
			// commit and response): the inbox remembered it.
			s.recordedUnanswered++
		}
		s.acked[d.id] = true
		return true
	case a.status/100 == 2:
		s.violations = append(s.violations, fmt.Sprintf("%s (%s): unexpected 2xx %d %q", d.id, d.typ, a.status, a.result))
		s.acked[d.id] = true
		return true
	case s.allowed(a):
		return false
	default:
		msg := a.result
		if a.err != nil {
			msg = a.err.Error()
		}
		s.violations = append(s.violations, fmt.Sprintf("%s (%s): server %d answered status %d: %s", d.id, d.typ, a.target, a.status, msg))
		return false
	}
}

// policy bounds the retries of one delivery within a sending pass.
type policy struct {
	tries   int           // attempts per delivery in this pass (0: until acknowledged or deadline)
	backoff time.Duration // base pause between attempts, growing linearly, capped at 1s
	until   time.Time     // no attempt starts after this
}

func (p policy) pause(attempt int) time.Duration {
	d := p.backoff * time.Duration(attempt)
	if d > time.Second {
		d = time.Second
	}
	return d
}

// deliver sends each sequence in order from `workers` goroutines. A delivery
// that is not acknowledged within the policy is left for a later pass and the
// sequence moves on, as a provider's queue does.
func (s *sender) deliver(ctx context.Context, seqs [][]*delivery, workers int, p policy) {
	work := make(chan []*delivery)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range work {
				for _, d := range seq {
					for try := 1; p.tries == 0 || try <= p.tries; try++ {
						if ctx.Err() != nil || time.Now().After(p.until) {
							break
						}
						if try == 1 && s.isTwin(d) {
							if s.twin(ctx, d) {
								break
							}
						} else if s.attempt(ctx, d) {
							break
						}
						select {
						case <-ctx.Done():
						case <-time.After(p.pause(try)):
						}
					}
				}
			}
		}()
	}
	for _, seq := range seqs {
		select {
		case work <- seq:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

// isTwin picks, from the webhook-id, the deliveries sent as twins.
func (s *sender) isTwin(d *delivery) bool {
	if s.twins <= 0 || len(s.bases) < 2 {
		return false
	}
	h := fnv.New32a()
	h.Write([]byte(d.id))
	return float64(h.Sum32()%1000) < s.twins*1000
}

// redeliver sends ds (each alone, in parallel) until acknowledged or the
// policy's deadline.
func (s *sender) redeliver(ctx context.Context, ds []*delivery, workers int, p policy) {
	seqs := make([][]*delivery, len(ds))
	for i, d := range ds {
		seqs[i] = []*delivery{d}
	}
	s.deliver(ctx, seqs, workers, p)
}

func (s *sender) ackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked)
}

// ackedSet is a copy of the acknowledged webhook-ids.
func (s *sender) ackedSet() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.acked))
	for k := range s.acked {
		out[k] = true
	}
	return out
}

// redeliveryList returns the deliveries of w never acknowledged, and a share of the
// acknowledged ones (providers redeliver some of those too: their ack was
// lost, or an operator replays).
func (s *sender) redeliveryList(w *workload, rng *rand.Rand, ackedShare float64) (unacked, again []*delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range w.all {
		switch {
		case !s.acked[d.id]:
			unacked = append(unacked, d)
		case rng.Float64() < ackedShare:
			again = append(again, d)
		}
	}
	return unacked, again
}

// report fails the test with every violation, and logs the status counts.
func (s *sender) report(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	codes := make([]int, 0, len(s.counts))
	for c := range s.counts {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		name := fmt.Sprint(c)
		if c == 0 {
			name = "transport-error"
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, s.counts[c]))
	}
	t.Logf("sender: %d acknowledged (%d recorded by an earlier attempt whose answer was lost); answers: %s",
		len(s.acked), s.recordedUnanswered, strings.Join(parts, " "))
	if len(s.violations) > 0 {
		assert.Fail(t, fmt.Sprintf("%d unexpected answers", len(s.violations)), firstOf(s.violations))
	}
}

// refusals is the number of 503 answers so far.
func (s *sender) refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[http.StatusServiceUnavailable]
}
