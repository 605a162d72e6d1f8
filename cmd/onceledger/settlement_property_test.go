package main_test

// Generated settlement reports against a reference model of the money, one
// property test per provider (settlement_property_<provider>_test.go; the
// Chinese bills have theirs in cnbills_property_test.go). Each generator
// writes a provider's report from the format's own rules (docs/settlement.md,
// the providers' published layouts) and the webhooks that tell the same
// facts, together with a model: a plain sum over the generated facts into
// the accounts of docs/reference.md ("Money and accounts"), sharing no code
// with the importers or the domain. The deliveries are sent over HTTP to the
// served app, in a random order, some twice; some reports arrive after the
// period of their facts was closed. The ledger must equal the model account
// by account, and every payout must be reconciled exactly when the model
// says its lines add up to it.
//
// Bounded for make test: a few runs of small reports. A failure prints the
// seed; ONCELEDGER_TEST_PROPERTY_SEED replays it, and
// ONCELEDGER_TEST_PROPERTY_RUNS runs more (bigger) cases.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/adyen"
	"github.com/onceledger/onceledger/adapters/providers/paypal"
	"github.com/onceledger/onceledger/adapters/providers/square"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
)

// propRuns is how many generated cases each provider's test runs, and
// propScale how many payments a case has.
func propRuns() (runs, scale int) {
	runs, scale = 2, 6
	if v, err := strconv.Atoi(os.Getenv("ONCELEDGER_TEST_PROPERTY_RUNS")); err == nil && v > 0 {
		runs, scale = v, 6+v
	}
	return runs, scale
}

// propSeed is the base seed: the variable's, or the clock's.
func propSeed(t *testing.T) uint64 {
	if v, err := strconv.ParseUint(os.Getenv("ONCELEDGER_TEST_PROPERTY_SEED"), 10, 64); err == nil {
		return v
	}
	return uint64(time.Now().UnixNano())
}

// propModel is the reference: balances per "account|CUR" and payouts.
type propModel struct {
	bal     map[string]int64
	payouts map[string]*propPayout
}

// propPayout is what the model knows of a payout: its amount (as the
// provider signs it) and the nets of the lines paid out in it.
type propPayout struct {
	amount   int64
	currency string
	lines    int
	linesNet int64
	// foreign: lines listed in the payout in another currency than its
	// own: they never prove it (CONTRACT, payout_mismatch), nor count in
	// its line_count.
	foreign int
}

func newPropModel() *propModel {
	return &propModel{bal: map[string]int64{}, payouts: map[string]*propPayout{}}
}

// post books amt from credit to debit in cur (a negative amt runs the other
// way).
func (m *propModel) post(debit, credit, cur string, amt int64) {
	m.bal[debit+"|"+cur] += amt
	m.bal[credit+"|"+cur] -= amt
}

func (m *propModel) payout(id string) *propPayout {
	p := m.payouts[id]
	if p == nil {
		p = &propPayout{}
		m.payouts[id] = p
	}
	return p
}

// line counts a report line's net in its payout.
func (m *propModel) line(payout string, net int64) {
	if payout == "" {
		return
	}
	p := m.payout(payout)
	p.lines++
	p.linesNet += net
}

// foreignLine counts a line listed in payout in another currency than the
// payout's: it proves nothing about it.
func (m *propModel) foreignLine(payout string) {
	m.payout(payout).foreign++
}

// paid records a payout of amount and books it: the bank receives it
// (a negative payout is the bank debited).
func (m *propModel) paid(provider, id, cur string, amount int64) {
	p := m.payout(id)
	p.amount, p.currency = amount, cur
	m.post("bank:payouts", "provider:"+provider+":balance", cur, amount)
}

// status is the payout's status by the contract: paid while no line is
// counted, reconciled when the lines' nets equal the amount, else mismatch.
func (p *propPayout) status() string {
	switch {
	case p.lines == 0 && p.foreign == 0:
		return "paid"
	case p.linesNet == p.amount:
		return "reconciled"
	}
	return "mismatch"
}

func (m *propModel) balances() map[string]int64 {
	out := map[string]int64{}
	for k, v := range m.bal {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// propDelivery is one thing sent: a report file or a signed webhook.
type propDelivery struct {
	name string
	path string
	body []byte
	sign func(body []byte) http.Header // nil: a report upload (admin token)
}

// propStack is the served app with Stripe, Adyen, PayPal and Square
// configured, the projectors running, on a fresh database.
func propStack(t *testing.T, kind eventStoreKind) *stack {
	t.Helper()
	keys := providerKeys(t)
	st, err := stripe.New([]string{stripeSecret}, 5*time.Minute)
	require.NoError(t, err)
	ad, err := adyen.New([]string{adyenOfficialKey, adyenTestKey})
	require.NoError(t, err)
	pp, err := paypal.New(paypalWebhookID, [][]byte{keys.paypalCertPEM}, 5*time.Minute)
	require.NoError(t, err)
	sq, err := square.New([]string{squareOfficialKey, squareTestKey}, squareOfficialURL)
	require.NoError(t, err)
	return serveSettleStack(t, kind, map[string]providers.Adapter{"stripe": st, adyen.Name: ad, paypal.Name: pp, square.Name: sq}, 4<<20)
}

// send delivers d: a report is uploaded with the admin token and must be
// taken whole; a webhook is signed anew and must be answered 200.
func (s *stack) send(provider string, d propDelivery) {
	s.t.Helper()
	if d.sign == nil {
		ans := s.v1(http.MethodPost, "/v1/settlements/"+provider, d.body)
		require.Equal(s.t, http.StatusOK, ans.Status, "%s: %s", d.name, ans.Body)
		return
	}
	ans := s.post(d.path, d.sign(d.body), d.body)
	require.Equal(s.t, http.StatusOK, ans.Status, "%s: %s", d.name, ans.Body)
}

// split makes a case of the deliveries: with closeMonth, about a third of
// them (reports and webhooks alike) arrive after the period closed.
func split(r *rand.Rand, provider string, ds []propDelivery, m *propModel, closeMonth string) *propCase {
	c := &propCase{provider: provider, model: m, closeMonth: closeMonth}
	for _, d := range ds {
		if closeMonth != "" && r.IntN(3) == 0 {
			c.late = append(c.late, d)
		} else {
			c.first = append(c.first, d)
		}
	}
	return c
}

// propCase is one generated case of a provider.
type propCase struct {
	provider string
	// first are delivered before the period closes, late after it, each
	// list in a random order with some deliveries repeated.
	first, late []propDelivery
	model       *propModel
	closeMonth  string // the period closed between first and late ("" for none)
}

// run sends the case and checks the ledger against the model.
func (c *propCase) run(t *testing.T, s *stack, r *rand.Rand) {
	t.Helper()
	for _, d := range shuffled(r, c.first) {
		s.send(c.provider, d)
	}
	if c.closeMonth != "" {
		s.projectedToHead()
		ans := s.v1(http.MethodPost, "/v1/periods/"+c.closeMonth+"/close", nil)
		require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	}
	for _, d := range shuffled(r, c.late) {
		s.send(c.provider, d)
	}
	c.check(t, s)
}

// shuffled returns the deliveries in a random order, about one in four sent
// twice (the second time at a random later place).
func shuffled(r *rand.Rand, ds []propDelivery) []propDelivery {
	out := append([]propDelivery(nil), ds...)
	for _, d := range ds {
		if r.IntN(4) == 0 {
			out = append(out, d)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// check compares the ledger and the payouts with the model.
func (c *propCase) check(t *testing.T, s *stack) {
	t.Helper()
	want := c.model.balances()
	// The projections may still be folding the last deliveries' events.
	var got map[string]int64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		s.projectedToHead()
		if got = s.readBalances(); equalBalances(got, want) || time.Now().After(deadline) {
			break
		}
	}
	for _, k := range unionKeys(got, want) {
		assert.Equal(t, want[k], got[k], "balance of %s", k)
	}
	payouts := s.readPayouts(c.provider)
	for id, p := range c.model.payouts {
		row, ok := payouts[id]
		if !assert.True(t, ok, "payout %s is listed", id) {
			continue
		}
		assert.Equal(t, p.status(), row.Status, "payout %s: amount %d, lines %d netting %d (listed: %+v)", id, p.amount, p.lines, p.linesNet, row)
		assert.Equal(t, p.amount, row.Amount, "payout %s amount", id)
		assert.Equal(t, p.lines, row.LineCount, "payout %s line count", id)
	}
	assert.Len(t, payouts, len(c.model.payouts), "no payout the model does not know")
	assert.Empty(t, s.openItems("conflicting_redelivery"), "a repeated delivery is a duplicate, not a conflict")
	if c.provider == "adyen" {
		// Each batch paid out whole is an assertion (assertions_adyen_test.go):
		// the ledger's view of it agrees, whatever the order of the deliveries.
		assert.Empty(t, s.statedBalances("adyen", "differs"), "every Adyen batch assertion agrees")
		assert.Empty(t, s.openItems("balance_mismatch"))
	}
}

func unionKeys(a, b map[string]int64) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]int64{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

type payoutRow struct {
	PayoutID  string `json:"payout_id"`
	Status    string `json:"status"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	LineCount int    `json:"line_count"`
	LinesNet  int64  `json:"lines_net"`
}

func (s *stack) readPayouts(provider string) map[string]payoutRow {
	s.t.Helper()
	var out struct {
		Payouts []payoutRow `json:"payouts"`
	}
	ans := s.v1(http.MethodGet, "/v1/payouts?provider="+provider, nil)
	require.Equal(s.t, http.StatusOK, ans.Status, ans.Body)
	require.NoError(s.t, json.Unmarshal([]byte(ans.Body), &out))
	m := map[string]payoutRow{}
	for _, p := range out.Payouts {
		m[p.PayoutID] = p
	}
	return m
}

// runProperty runs a provider's generated cases (and its fixed seeds first)
// on both event stores.
func runProperty(t *testing.T, provider string, seeds map[string]func(*rand.Rand, string) *propCase,
	gen func(r *rand.Rand, run string, scale int) *propCase) {
	runs, scale := propRuns()
	base := propSeed(t)
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			names := make([]string, 0, len(seeds))
			for n := range seeds {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				t.Run("seed-"+n, func(t *testing.T) {
					r := rand.New(rand.NewPCG(base, 24))
					c := seeds[n](r, uniq(provider))
					c.run(t, propStack(t, kind), r)
				})
			}
			for i := range runs {
				seed := base + uint64(i)
				t.Run(fmt.Sprintf("generated-%d", i), func(t *testing.T) {
					t.Logf("%s: ONCELEDGER_TEST_PROPERTY_SEED=%d", provider, seed)
					r := rand.New(rand.NewPCG(seed, 24))
					c := gen(r, uniq(provider), scale)
					c.run(t, propStack(t, kind), r)
				})
			}
		})
	}
}

// minorText writes minor units of a currency with exp decimals as a plain
// decimal ("-12.34", "1200").
func minorText(v int64, exp int) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	if exp == 0 {
		return sign + strconv.FormatInt(v, 10)
	}
	p := int64(1)
	for range exp {
		p *= 10
	}
	return fmt.Sprintf("%s%d.%0*d", sign, v/p, exp, v%p)
}

// parseMinorText reads what minorText writes.
func parseMinorText(s string, exp int) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > exp {
		return 0, fmt.Errorf("%q: more than %d decimals", s, exp)
	}
	frac += strings.Repeat("0", exp-len(frac))
	if whole == "" {
		whole = "0"
	}
	v, err := strconv.ParseInt(whole+frac, 10, 64)
	if neg {
		v = -v
	}
	return v, err
}
