// Package ledger is double-entry bookkeeping: postings, the chart of accounts
// of docs/reference.md ("Money and accounts"), and the balance rule (every
// event's postings sum to zero per currency; debit positive, credit negative).
package ledger

import (
	"fmt"
	"math"
	"math/bits"
	"sort"

	"github.com/onceledger/onceledger/domain/money"
)

// Posting is one signed line of a journal entry: debit positive, credit negative.
type Posting struct {
	Account  string
	Currency money.Currency
	Amount   int64
}

// Accounts of the chart in docs/reference.md. Provider-specific ones take the
// provider name.
const (
	RevenueSales    = "revenue:sales"
	RevenueRefunds  = "revenue:refunds"
	ExpensesDispute = "expenses:disputes"
	BankPayouts     = "bank:payouts"
)

func ProviderBalance(p string) string { return "provider:" + p + ":balance" }
func ProviderFees(p string) string    { return "expenses:fees:" + p }

// ProviderDiscounts is what the merchant funded of its customers' payments
// through p as discounts (Alipay: total_amount − receipt_amount).
func ProviderDiscounts(p string) string { return "expenses:discounts:" + p }
func DisputeReceivable(p string) string { return "receivable:disputes:" + p }

// ProviderReserve is what p withholds from its balance as a reserve or
// security deposit, still the merchant's money (Adyen DepositCorrection).
func ProviderReserve(p string) string { return "provider:" + p + ":reserve" }

// Unbalanced is returned by Check when postings do not sum to zero.
type Unbalanced struct {
	Currency money.Currency
	// Sum is the non-zero sum, clamped to the int64 range when Overflow is set.
	Sum int64
	// Overflow reports that the exact sum does not fit in int64.
	Overflow bool
}

func (u *Unbalanced) Error() string {
	if u.Overflow {
		return fmt.Sprintf("postings do not balance: %s sums beyond int64 (%d)", u.Currency, u.Sum)
	}
	return fmt.Sprintf("postings do not balance: %s sums to %d", u.Currency, u.Sum)
}

// sum128 is an exact signed 128-bit accumulator. int64 addition would wrap:
// MaxInt64 + 1 + MinInt64 ... lines could then "balance" by overflow, so the
// check sums in 128 bits, which cannot overflow for fewer than 2^63 lines.
type sum128 struct {
	hi int64
	lo uint64
}

func (s *sum128) add(a int64) {
	var carry uint64
	s.lo, carry = bits.Add64(s.lo, uint64(a), 0)
	s.hi += a>>63 + int64(carry) // a>>63 sign-extends a into the high word
}

func (s sum128) zero() bool { return s.hi == 0 && s.lo == 0 }

// int64 returns the sum clamped to the int64 range and whether it fits.
func (s sum128) int64() (int64, bool) {
	switch {
	case s.hi == 0 && s.lo <= math.MaxInt64:
		return int64(s.lo), true
	case s.hi == -1 && s.lo > math.MaxInt64:
		return int64(s.lo), true
	case s.hi < 0:
		return math.MinInt64, false
	default:
		return math.MaxInt64, false
	}
}

// Check returns *Unbalanced for the first currency (in code order) whose
// postings do not sum to zero. The sums are exact: int64 overflow can neither
// hide an imbalance nor invent one.
func Check(ps []Posting) error {
	sums := map[money.Currency]*sum128{}
	for _, p := range ps {
		s := sums[p.Currency]
		if s == nil {
			s = &sum128{}
			sums[p.Currency] = s
		}
		s.add(p.Amount)
	}
	cur := make([]string, 0, len(sums))
	for c := range sums {
		cur = append(cur, string(c))
	}
	sort.Strings(cur)
	for _, c := range cur {
		s := sums[money.Currency(c)]
		if !s.zero() {
			v, fits := s.int64()
			return &Unbalanced{Currency: money.Currency(c), Sum: v, Overflow: !fits}
		}
	}
	return nil
}
