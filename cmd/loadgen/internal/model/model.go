// Package model is the load generator's own expectation of the ledger: the
// chart of accounts and posting rules of docs/reference.md, re-implemented here on
// purpose. It must not import the project's domain packages: a run compares
// the server's balances with an independent computation, so an error in the
// server's posting rules shows up as a difference instead of being copied.
package model

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Kind is a business fact that posts (authorizations and failures post
// nothing and are not modelled).
type Kind int

// The posting facts of docs/reference.md's table.
const (
	Capture Kind = iota + 1
	Refund
	DisputeOpened
	DisputeWon
	DisputeLost
	Payout
)

func (k Kind) String() string {
	switch k {
	case Capture:
		return "capture"
	case Refund:
		return "refund"
	case DisputeOpened:
		return "dispute_opened"
	case DisputeWon:
		return "dispute_won"
	case DisputeLost:
		return "dispute_lost"
	case Payout:
		return "payout"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Fact is one business fact of a provider, in minor units of Currency
// (upper-case ISO 4217). Fee is used by Capture only.
type Fact struct {
	Provider string
	Kind     Kind
	Currency string
	Amount   int64
	Fee      int64
}

// Account names, spelled from docs/reference.md.
const (
	RevenueSales    = "revenue:sales"
	RevenueRefunds  = "revenue:refunds"
	ExpensesDispute = "expenses:disputes"
	BankPayouts     = "bank:payouts"
)

// ProviderBalance is provider:p:balance.
func ProviderBalance(p string) string { return "provider:" + p + ":balance" }

// ProviderFees is expenses:fees:p.
func ProviderFees(p string) string { return "expenses:fees:" + p }

// DisputeReceivable is receivable:disputes:p.
func DisputeReceivable(p string) string { return "receivable:disputes:" + p }

// Key names one balance.
type Key struct {
	Account  string
	Currency string
}

// Posting is a signed amount on an account: debit positive, credit negative.
type Posting struct {
	Key
	Amount int64
}

// Errors of the model: they mean the generator produced something the
// contract does not define, a bug of the generator.
var (
	ErrInvalidFact = errors.New("invalid fact")
	ErrOverflow    = errors.New("balance overflows int64")
)

// Postings returns the entries of f per docs/reference.md. They sum to zero.
func Postings(f Fact) ([]Posting, error) {
	if f.Provider == "" || f.Currency == "" || f.Amount <= 0 || f.Fee < 0 {
		return nil, fmt.Errorf("%w: %+v", ErrInvalidFact, f)
	}
	p, c := f.Provider, f.Currency
	at := func(account string, amount int64) Posting { return Posting{Key{account, c}, amount} }
	switch f.Kind {
	case Capture:
		if f.Fee > f.Amount {
			return nil, fmt.Errorf("%w: fee %d above amount %d", ErrInvalidFact, f.Fee, f.Amount)
		}
		out := []Posting{at(ProviderBalance(p), f.Amount-f.Fee), at(RevenueSales, -f.Amount)}
		if f.Fee > 0 {
			out = append(out, at(ProviderFees(p), f.Fee))
		}
		return out, nil
	case Refund:
		return []Posting{at(RevenueRefunds, f.Amount), at(ProviderBalance(p), -f.Amount)}, nil
	case DisputeOpened:
		return []Posting{at(DisputeReceivable(p), f.Amount), at(ProviderBalance(p), -f.Amount)}, nil
	case DisputeWon:
		return []Posting{at(ProviderBalance(p), f.Amount), at(DisputeReceivable(p), -f.Amount)}, nil
	case DisputeLost:
		return []Posting{at(ExpensesDispute, f.Amount), at(DisputeReceivable(p), -f.Amount)}, nil
	case Payout:
		return []Posting{at(BankPayouts, f.Amount), at(ProviderBalance(p), -f.Amount)}, nil
	}
	return nil, fmt.Errorf("%w: kind %v", ErrInvalidFact, f.Kind)
}

// Ledger is a set of balances. The zero value is not usable; use New.
type Ledger struct{ b map[Key]int64 }

// New returns an empty ledger.
func New() *Ledger { return &Ledger{b: map[Key]int64{}} }

// Apply posts f.
func (l *Ledger) Apply(f Fact) error {
	ps, err := Postings(f)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := l.Add(p.Key, p.Amount); err != nil {
			return err
		}
	}
	return nil
}

// Add adds amount to the balance at k, refusing to wrap around.
func (l *Ledger) Add(k Key, amount int64) error {
	cur := l.b[k]
	if (amount > 0 && cur > math.MaxInt64-amount) || (amount < 0 && cur < math.MinInt64-amount) {
		return fmt.Errorf("%w: %s %s %d + %d", ErrOverflow, k.Account, k.Currency, cur, amount)
	}
	l.b[k] = cur + amount
	return nil
}

// Balance returns the balance at k (0 if never posted).
func (l *Ledger) Balance(k Key) int64 { return l.b[k] }

// Balances returns a copy of the non-zero balances.
func (l *Ledger) Balances() map[Key]int64 {
	out := make(map[Key]int64, len(l.b))
	for k, v := range l.b {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// Sub returns l − base, for comparing the change a run caused on a shared
// database. Both operands are kept.
func (l *Ledger) Sub(base *Ledger) (*Ledger, error) {
	out := New()
	for k, v := range l.b {
		if err := out.Add(k, v); err != nil {
			return nil, err
		}
	}
	for k, v := range base.b {
		if v == math.MinInt64 {
			return nil, fmt.Errorf("%w: negating %s %s", ErrOverflow, k.Account, k.Currency)
		}
		if err := out.Add(k, -v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Unbalanced returns, per currency, the sum of all balances where it is not
// zero: double entry means it is always empty for a correct ledger.
func (l *Ledger) Unbalanced() map[string]int64 {
	sums := map[string]int64{}
	for k, v := range l.b {
		sums[k.Currency] += v // wraps only beyond the overflow checks of Add
	}
	for c, s := range sums {
		if s == 0 {
			delete(sums, c)
		}
	}
	return sums
}

// Difference is one balance that is not what the model expects.
type Difference struct {
	Key
	Expected int64
	Actual   int64
}

// Diff compares expected with actual, treating an absent balance as 0, and
// returns every difference sorted by account then currency.
func Diff(expected, actual *Ledger) []Difference {
	keys := map[Key]bool{}
	for k := range expected.b {
		keys[k] = true
	}
	for k := range actual.b {
		keys[k] = true
	}
	var out []Difference
	for k := range keys {
		e, a := expected.b[k], actual.b[k]
		if e != a {
			out = append(out, Difference{Key: k, Expected: e, Actual: a})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Account != out[j].Account {
			return out[i].Account < out[j].Account
		}
		return out[i].Currency < out[j].Currency
	})
	return out
}
