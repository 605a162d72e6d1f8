package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

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
	if err != nil {
		t.Fatal(err)
	}
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
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	return m
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// readFacts reads the posting facts out of one lifecycle's bodies the way
// CONTRACT.md and PROVIDERS.md describe the payloads, independently of the
// generator's code: a capture by its charge/capture id (both Stripe reports
// must agree), refunds, disputes (an outcome implies its opening), payouts.
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
		if b["type"] != d.Type {
			t.Fatalf("delivery type %s, body type %v", d.Type, b["type"])
		}
		if lc.Provider == Stripe {
			if b["id"] != d.ID {
				t.Fatalf("stripe event id %v, delivery id %s", b["id"], d.ID)
			}
			o := b["data"].(obj)["object"].(obj)
			cur, _ := o["currency"].(string)
			if cur != strings.ToLower(cur) {
				t.Fatalf("stripe currency %q not lower case", cur)
			}
			switch d.Type {
			case "charge.succeeded":
				bt := o["balance_transaction"].(obj)
				c := capture{num(t, o["amount_captured"]), num(t, bt["fee"])}
				if old, ok := captures[o["id"].(string)]; ok && old != c {
					t.Fatalf("capture %v reported as %v and %v", o["id"], old, c)
				}
				captures[o["id"].(string)] = c
				if o["captured"] != true || o["payment_intent"] != lc.Key {
					t.Fatalf("charge %v", o)
				}
			case "payment_intent.succeeded":
				ch := o["latest_charge"].(obj)
				bt := ch["balance_transaction"].(obj)
				c := capture{num(t, o["amount_received"]), num(t, bt["fee"])}
				if old, ok := captures[ch["id"].(string)]; ok && old != c {
					t.Fatalf("capture %v reported as %v and %v", ch["id"], old, c)
				}
				captures[ch["id"].(string)] = c
				if o["id"] != lc.Key {
					t.Fatalf("payment intent %v for lifecycle %s", o["id"], lc.Key)
				}
			case "refund.created":
				if o["status"] != "succeeded" || o["payment_intent"] != lc.Key {
					t.Fatalf("refund %v", o)
				}
				facts = append(facts, fact(model.Refund, cur, num(t, o["amount"])))
			case "charge.dispute.created":
				disputes[o["id"].(string)] = fact(model.DisputeOpened, cur, num(t, o["amount"]))
			case "charge.dispute.closed":
				disputes[o["id"].(string)] = fact(model.DisputeOpened, cur, num(t, o["amount"]))
				outcomes[o["id"].(string)] = map[any]model.Kind{"won": model.DisputeWon, "lost": model.DisputeLost}[o["status"]]
			case "payout.paid":
				facts = append(facts, fact(model.Payout, cur, num(t, o["amount"])))
			case "payment_intent.created", "payment_intent.payment_failed", "charge.refunded":
				if _, listed := o["refunds"]; listed {
					t.Fatal("charge.refunded must not list refunds: they are counted from refund.created")
				}
			default:
				t.Fatalf("unexpected stripe type %s", d.Type)
			}
			continue
		}
		o := b["data"].(obj)
		cur, _ := o["currency"].(string)
		if d.Type != "payout.paid" && o["payment_id"] != lc.Key {
			t.Fatalf("payment_id %v in lifecycle %s", o["payment_id"], lc.Key)
		}
		if _, err := time.Parse(time.RFC3339, b["timestamp"].(string)); err != nil {
			t.Fatal(err)
		}
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
			t.Fatalf("unexpected standard type %s", d.Type)
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
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s %s: bodies tell\n %+v\nmodel has\n %+v", lc.Provider, lc.Key, got, want)
		}
		for _, f := range lc.Facts {
			kinds[f.Kind]++
			if f.Currency == "" || f.Currency != strings.ToUpper(f.Currency) {
				t.Fatalf("currency %q", f.Currency)
			}
		}
	}
	for _, k := range []model.Kind{model.Capture, model.Refund, model.DisputeOpened, model.DisputeWon, model.DisputeLost, model.Payout} {
		if kinds[k] == 0 {
			t.Errorf("3000 payments generated no %v", k)
		}
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
				if f.Fee <= 0 || f.Fee >= f.Amount {
					t.Fatalf("fee %d of %d", f.Fee, f.Amount)
				}
			case model.Refund:
				refunded += f.Amount
				n++
			}
		}
		if refunded > captured {
			t.Fatalf("%s refunds %d > captured %d", lc.Key, refunded, captured)
		}
		if n == 2 {
			twoRefunds++
		}
	}
	if twoRefunds == 0 {
		t.Error("no payment with two refunds")
	}
}

func TestSeedDeterminesTheRun(t *testing.T) {
	a := lifecycles(gen(t, Config{Seed: 9, Duplicates: 0.3, Reorder: 0.2, Conflicts: 0.1}), 300)
	b := lifecycles(gen(t, Config{Seed: 9, Duplicates: 0.3, Reorder: 0.2, Conflicts: 0.1}), 300)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different runs")
	}
	c := lifecycles(gen(t, Config{Seed: 10, Duplicates: 0.3, Reorder: 0.2, Conflicts: 0.1}), 300)
	if reflect.DeepEqual(a, c) {
		t.Fatal("the seed changes nothing")
	}
}

func TestIDsAreUniqueWithinAndAcrossRuns(t *testing.T) {
	seen := map[string]string{}
	for _, run := range []string{"ra", "rb"} {
		for _, lc := range lifecycles(gen(t, Config{Seed: 3, RunID: run}), 2000) {
			for _, d := range lc.Deliveries {
				k := d.Provider + "/" + d.ID
				if prev, dup := seen[k]; dup {
					t.Fatalf("delivery id %s used twice (%s and %s)", k, prev, lc.Key)
				}
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
				if bytes.Equal(d.Conflict, d.Body) {
					t.Fatal("a conflicting redelivery identical to the original")
				}
				// Same event, other amount: identical once amounts are blanked.
				if lc.Provider == Stripe && decode(t, d.Conflict)["id"] != d.ID {
					t.Fatal("conflict under another event id")
				}
			}
		}
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > want*0.1 {
			t.Errorf("%s ratio %.4f, want about %.4f", name, got, want)
		}
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
			if n < 1 || n > 2 {
				t.Fatalf("duplicates 1.5 gave %d extra deliveries", n)
			}
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
		if lc.Reordered != hasAfter {
			t.Fatalf("%s: reordered=%v with after-capture deliveries=%v", lc.Key, lc.Reordered, hasAfter)
		}
		if !lc.Reordered {
			continue
		}
		reordered++
		seenOther := false
		for _, d := range lc.Deliveries {
			if !after[d.Type] {
				seenOther = true
			} else if seenOther {
				t.Fatalf("%s: %s after the capture in a reordered payment", lc.Key, d.Type)
			}
		}
	}
	if reordered == 0 {
		t.Fatal("nothing reordered")
	}
	for _, lc := range lifecycles(gen(t, Config{Seed: 5}), 500) {
		if lc.Reordered {
			t.Fatal("reordered with --reorder 0")
		}
	}
}

func TestPayoutsFallDue(t *testing.T) {
	g := gen(t, Config{Seed: 6, Providers: []string{Standard}, PayoutEvery: 10})
	var payouts, payments int
	for range 100 {
		lcs := g.Payment()
		payments++
		for _, lc := range lcs[1:] {
			if !lc.Payout || len(lc.Facts) != 1 || lc.Facts[0].Kind != model.Payout || lc.Facts[0].Amount <= 0 {
				t.Fatalf("payout lifecycle %+v", lc)
			}
			payouts++
		}
		if lcs[0].Payout {
			t.Fatal("payment lifecycle marked payout")
		}
	}
	if payouts < 10 {
		t.Fatalf("%d payouts after %d payments", payouts, payments)
	}
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
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
}

// Run ids of different lengths must not produce the same ids ("ab"+"c1"
// against "abc"+"1").
func TestRunIDPrefixesDoNotCollide(t *testing.T) {
	ids := map[string]bool{}
	for _, run := range []string{"ab", "abc", "a"} {
		for _, lc := range lifecycles(gen(t, Config{Seed: 8, RunID: run}), 1500) {
			for _, d := range lc.Deliveries {
				if ids[d.ID] {
					t.Fatalf("id %s produced by two runs", d.ID)
				}
				ids[d.ID] = true
			}
		}
	}
}
