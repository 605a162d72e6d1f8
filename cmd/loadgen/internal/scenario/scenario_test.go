package scenario

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/cmd/loadgen/internal/model"
)

func gen(t *testing.T, cfg Config) *Generator {
	t.Helper()
	if cfg.Providers == nil {
		cfg.Providers = []string{Stripe, Standard}
	}
	if cfg.RunID == "" {
		cfg.RunID = "t1"
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Unix(1764410400, 0)
	}
	g, err := New(cfg)
	require.NoError(t, err)
	return g
}

func lifecycles(g *Generator, payments int) []Lifecycle {
	var out []Lifecycle
	for range payments {
		out = append(out, g.Payment()...)
	}
	return out
}

type obj = map[string]any

func decode(t *testing.T, b []byte) obj {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m obj
	require.NoError(t, dec.Decode(&m), "body %s", b)
	return m
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v (%T) is not a number", v, v)
	i, err := n.Int64()
	require.NoError(t, err)
	return i
}

// readFacts reads the posting facts out of one lifecycle's bodies the way
// docs/reference.md and the providers' specifications describe the payloads,
// independently of the generator's code: a capture by its charge/capture
// id (both Stripe reports must agree), refunds, disputes (an outcome implies
// its opening), payouts.
func readFacts(t *testing.T, lc Lifecycle) []model.Fact {
	t.Helper()
	type capture struct{ amount, fee int64 }
	captures := map[string]capture{}
	var facts []model.Fact
	disputes := map[string]model.Fact{}
	outcomes := map[string]model.Kind{}
	fact := func(kind model.Kind, cur string, amount int64) model.Fact {
		return model.Fact{Provider: lc.Provider, Kind: kind, Currency: strings.ToUpper(cur), Amount: amount}
	}
	for _, d := range lc.Deliveries {
		b := decode(t, d.Body)
		require.Equal(t, d.Type, b["type"], "delivery type %s, body type %v", d.Type, b["type"])
		if lc.Provider == Stripe {
			require.Equal(t, d.ID, b["id"], "stripe event id %v, delivery id %s", b["id"], d.ID)
			o := b["data"].(obj)["object"].(obj)
			cur, _ := o["currency"].(string)
			require.Equal(t, strings.ToLower(cur), cur, "stripe currency %q not lower case", cur)
			switch d.Type {
			case "charge.succeeded":
				bt := o["balance_transaction"].(obj)
				c := capture{num(t, o["amount_captured"]), num(t, bt["fee"])}
				old, ok := captures[o["id"].(string)]
				require.False(t, ok && old != c, "capture %v reported as %v and %v", o["id"], old, c)
				captures[o["id"].(string)] = c
				require.True(t, o["captured"] == true && o["payment_intent"] == lc.Key, "charge %v", o)
			case "payment_intent.succeeded":
				ch := o["latest_charge"].(obj)
				bt := ch["balance_transaction"].(obj)
				c := capture{num(t, o["amount_received"]), num(t, bt["fee"])}
				old, ok := captures[ch["id"].(string)]
				require.False(t, ok && old != c, "capture %v reported as %v and %v", ch["id"], old, c)
				captures[ch["id"].(string)] = c
				require.Equal(t, lc.Key, o["id"], "payment intent %v for lifecycle %s", o["id"], lc.Key)
			case "refund.created":
				require.True(t, o["status"] == "succeeded" && o["payment_intent"] == lc.Key, "refund %v", o)
				facts = append(facts, fact(model.Refund, cur, num(t, o["amount"])))
			case "charge.dispute.created":
				disputes[o["id"].(string)] = fact(model.DisputeOpened, cur, num(t, o["amount"]))
			case "charge.dispute.closed":
				disputes[o["id"].(string)] = fact(model.DisputeOpened, cur, num(t, o["amount"]))
				outcomes[o["id"].(string)] = map[any]model.Kind{"won": model.DisputeWon, "lost": model.DisputeLost}[o["status"]]
			case "payout.paid":
				facts = append(facts, fact(model.Payout, cur, num(t, o["amount"])))
			case "payment_intent.created", "payment_intent.payment_failed", "charge.refunded":
				require.NotContains(t, o, "refunds", "charge.refunded must not list refunds: they are counted from refund.created")
			default:
				require.Failf(t, "unexpected stripe type", "%s", d.Type)
			}
			continue
		}
		o := b["data"].(obj)
		cur, _ := o["currency"].(string)
		if d.Type != "payout.paid" {
			require.Equal(t, lc.Key, o["payment_id"], "payment_id %v in lifecycle %s", o["payment_id"], lc.Key)
		}
		_, err := time.Parse(time.RFC3339, b["timestamp"].(string))
		require.NoError(t, err)
		switch d.Type {
		case "payment.captured":
			captures[o["capture_id"].(string)] = capture{num(t, o["amount"]), num(t, o["fee"])}
		case "refund.succeeded":
			facts = append(facts, fact(model.Refund, cur, num(t, o["amount"])))
		case "dispute.opened":
			disputes[o["dispute_id"].(string)] = fact(model.DisputeOpened, cur, num(t, o["amount"]))
		case "dispute.won", "dispute.lost":
			disputes[o["dispute_id"].(string)] = fact(model.DisputeOpened, cur, num(t, o["amount"]))
			outcomes[o["dispute_id"].(string)] = map[string]model.Kind{"dispute.won": model.DisputeWon, "dispute.lost": model.DisputeLost}[d.Type]
		case "payout.paid":
			facts = append(facts, fact(model.Payout, cur, num(t, o["amount"])))
		case "payment.authorized", "payment.failed":
		default:
			require.Failf(t, "unexpected standard type", "%s", d.Type)
		}
	}
	cur := ""
	for _, f := range lc.Facts {
		cur = f.Currency
	}
	for _, c := range captures {
		f := fact(model.Capture, cur, c.amount)
		f.Fee = c.fee
		facts = append(facts, f)
	}
	for id, f := range disputes {
		facts = append(facts, f)
		if k := outcomes[id]; k != 0 {
			f.Kind = k
			facts = append(facts, f)
		}
	}
	return facts
}

func sortFacts(fs []model.Fact) []model.Fact {
	out := append([]model.Fact(nil), fs...)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Amount != b.Amount {
			return a.Amount < b.Amount
		}
		return a.Fee < b.Fee
	})
	return out
}

func TestDeliveriesTellTheFacts(t *testing.T) {
	g := gen(t, Config{Seed: 1, Duplicates: 0.5, Reorder: 0.5, Conflicts: 0.2})
	kinds := map[model.Kind]int{}
	for _, lc := range lifecycles(g, 3000) {
		got, want := sortFacts(readFacts(t, lc)), sortFacts(lc.Facts)
		require.Equal(t, want, got, "%s %s: the bodies tell other facts than the model has", lc.Provider, lc.Key)
		for _, f := range lc.Facts {
			kinds[f.Kind]++
			require.True(t, f.Currency != "" && f.Currency == strings.ToUpper(f.Currency), "currency %q", f.Currency)
		}
	}
	for _, k := range []model.Kind{model.Capture, model.Refund, model.DisputeOpened, model.DisputeWon, model.DisputeLost, model.Payout} {
		assert.NotZero(t, kinds[k], "3000 payments generated no %v", k)
	}
}

func TestRefundsNeverExceedTheCapture(t *testing.T) {
	g := gen(t, Config{Seed: 2})
	twoRefunds := 0
	for _, lc := range lifecycles(g, 5000) {
		var captured, refunded int64
		n := 0
		for _, f := range lc.Facts {
			switch f.Kind {
			case model.Capture:
				captured += f.Amount
				require.True(t, f.Fee > 0 && f.Fee < f.Amount, "fee %d of %d", f.Fee, f.Amount)
			case model.Refund:
				refunded += f.Amount
				n++
			}
		}
		require.LessOrEqual(t, refunded, captured, "%s refunds %d > captured %d", lc.Key, refunded, captured)
		if n == 2 {
			twoRefunds++
		}
	}
	assert.NotZero(t, twoRefunds, "no payment with two refunds")
}

func TestSeedDeterminesTheRun(t *testing.T) {
	a := lifecycles(gen(t, Config{Seed: 9, Duplicates: 0.3, Reorder: 0.2, Conflicts: 0.1}), 300)
	b := lifecycles(gen(t, Config{Seed: 9, Duplicates: 0.3, Reorder: 0.2, Conflicts: 0.1}), 300)
	require.Equal(t, a, b, "same seed, different runs")
	c := lifecycles(gen(t, Config{Seed: 10, Duplicates: 0.3, Reorder: 0.2, Conflicts: 0.1}), 300)
	assert.NotEqual(t, a, c, "the seed changes nothing")
}

func TestIDsAreUniqueWithinAndAcrossRuns(t *testing.T) {
	seen := map[string]string{}
	for _, run := range []string{"ra", "rb"} {
		for _, lc := range lifecycles(gen(t, Config{Seed: 3, RunID: run}), 2000) {
			for _, d := range lc.Deliveries {
				k := d.Provider + "/" + d.ID
				prev, dup := seen[k]
				require.False(t, dup, "delivery id %s used twice (%s and %s)", k, prev, lc.Key)
				seen[k] = lc.Key
			}
		}
	}
}

func TestRedeliveryAndConflictRatios(t *testing.T) {
	g := gen(t, Config{Seed: 4, Duplicates: 0.2, Conflicts: 0.01})
	var deliveries, extra, twins, conflicts int
	for _, lc := range lifecycles(g, 20000) {
		for _, d := range lc.Deliveries {
			deliveries++
			extra += d.Copies
			if d.Twin {
				extra++
				twins++
			}
			if d.Conflict != nil {
				conflicts++
				require.NotEqual(t, d.Body, d.Conflict, "a conflicting redelivery identical to the original")
				// Same event, other amount: identical once amounts are blanked.
				if lc.Provider == Stripe {
					require.Equal(t, d.ID, decode(t, d.Conflict)["id"], "conflict under another event id")
				}
			}
		}
	}
	near := func(name string, got, want float64) {
		assert.InDelta(t, want, got, want*0.1, "%s ratio %.4f, want about %.4f", name, got, want)
	}
	near("extra deliveries", float64(extra)/float64(deliveries), 0.2)
	near("twins among extras", float64(twins)/float64(extra), 0.3)
	near("conflicts", float64(conflicts)/float64(deliveries), 0.01)

	g = gen(t, Config{Seed: 4, Duplicates: 1.5})
	for _, lc := range lifecycles(g, 200) {
		for _, d := range lc.Deliveries {
			n := d.Copies
			if d.Twin {
				n++
			}
			require.True(t, n >= 1 && n <= 2, "duplicates 1.5 gave %d extra deliveries", n)
		}
	}
}

func TestReorderSendsRefundsAndDisputesFirst(t *testing.T) {
	after := map[string]bool{"refund.created": true, "charge.refunded": true, "charge.dispute.created": true,
		"charge.dispute.closed": true, "refund.succeeded": true, "dispute.opened": true, "dispute.won": true, "dispute.lost": true}
	g := gen(t, Config{Seed: 5, Reorder: 1})
	reordered := 0
	for _, lc := range lifecycles(g, 2000) {
		hasAfter := false
		for _, d := range lc.Deliveries {
			hasAfter = hasAfter || after[d.Type]
		}
		require.Equal(t, hasAfter, lc.Reordered, "%s: reordered=%v with after-capture deliveries=%v", lc.Key, lc.Reordered, hasAfter)
		if !lc.Reordered {
			continue
		}
		reordered++
		seenOther := false
		for _, d := range lc.Deliveries {
			if !after[d.Type] {
				seenOther = true
			} else {
				require.False(t, seenOther, "%s: %s after the capture in a reordered payment", lc.Key, d.Type)
			}
		}
	}
	assert.NotZero(t, reordered, "nothing reordered")
	for _, lc := range lifecycles(gen(t, Config{Seed: 5}), 500) {
		require.False(t, lc.Reordered, "reordered with --reorder 0")
	}
}

func TestPayoutsFallDue(t *testing.T) {
	g := gen(t, Config{Seed: 6, Providers: []string{Standard}, PayoutEvery: 10})
	var payouts, payments int
	for range 100 {
		lcs := g.Payment()
		payments++
		for _, lc := range lcs[1:] {
			require.True(t, lc.Payout && len(lc.Facts) == 1 && lc.Facts[0].Kind == model.Payout && lc.Facts[0].Amount > 0,
				"payout lifecycle %+v", lc)
			payouts++
		}
		require.False(t, lcs[0].Payout, "payment lifecycle marked payout")
	}
	assert.GreaterOrEqual(t, payouts, 10, "%d payouts after %d payments", payouts, payments)
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{RunID: "x"},
		{Providers: []string{"adyen"}, RunID: "x"},
		{Providers: []string{Stripe}, RunID: ""},
		{Providers: []string{Stripe}, RunID: "a_b"},
		{Providers: []string{Stripe}, RunID: "x", Duplicates: -1},
		{Providers: []string{Stripe}, RunID: "x", Reorder: 1.5},
		{Providers: []string{Stripe}, RunID: "x", Conflicts: math.NaN()},
	} {
		_, err := New(c)
		assert.ErrorIs(t, err, ErrConfig, "%+v", c)
	}
}

// Run ids of different lengths must not produce the same ids ("ab"+"c1"
// against "abc"+"1").
func TestRunIDPrefixesDoNotCollide(t *testing.T) {
	ids := map[string]bool{}
	for _, run := range []string{"ab", "abc", "a"} {
		for _, lc := range lifecycles(gen(t, Config{Seed: 8, RunID: run}), 1500) {
			for _, d := range lc.Deliveries {
				require.False(t, ids[d.ID], "id %s produced by two runs", d.ID)
				ids[d.ID] = true
			}
		}
	}
}
