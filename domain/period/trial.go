package period

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

// ErrOverflow: a sum of minor units does not fit int64.
var ErrOverflow = errors.New("amount overflows int64")

// Balance is one line of a trial balance: an account in one currency.
// Debits and Credits are the period's entries, both as non-negative
// magnitudes (entries are signed: debit positive, credit negative);
// Closing = Opening + Debits - Credits, and Opening is the closing of
// everything booked into earlier periods.
type Balance struct {
	Account  string
	Currency money.Currency
	Opening  int64
	Debits   int64
	Credits  int64
	Closing  int64
}

// Sum is the raw figures of one account and currency, as a read model adds
// them up: the opening (signed sum of the entries booked before the
// period), and the period's debits and credits (magnitudes).
type Sum struct {
	Account  string
	Currency money.Currency
	Opening  int64
	Debits   int64
	Credits  int64
}

// Entry is one posting booked into a period.
type Entry struct {
	ledger.Posting
	// Effective is the period of the entry's effective time; Booked the
	// period it is booked into. They differ only for late adjustments.
	Effective Period
	Booked    Period
	Late      bool
}

// TrialBalance is a period's figures, with the late entries booked into it
// for earlier periods listed as adjustments.
type TrialBalance struct {
	Period      Period
	Lines       []Balance
	Adjustments []Entry
}

// Lines turns sums into trial balance lines: the closing computed with
// checked arithmetic, lines with nothing in them (zero opening, no
// activity) left out, sorted by account then currency.
func Lines(sums []Sum) ([]Balance, error) {
	out := make([]Balance, 0, len(sums))
	for _, s := range sums {
		if s.Opening == 0 && s.Debits == 0 && s.Credits == 0 {
			continue
		}
		if s.Debits < 0 || s.Credits < 0 {
			return nil, fmt.Errorf("%s/%s: debits and credits are magnitudes, got %d and %d", s.Account, s.Currency, s.Debits, s.Credits)
		}
		c, ok := add(s.Opening, s.Debits)
		if ok {
			c, ok = add(c, -s.Credits)
		}
		if !ok {
			return nil, fmt.Errorf("%w: closing of %s/%s", ErrOverflow, s.Account, s.Currency)
		}
		out = append(out, Balance{Account: s.Account, Currency: s.Currency, Opening: s.Opening, Debits: s.Debits, Credits: s.Credits, Closing: c})
	}
	sortLines(out)
	return out, nil
}

func sortLines(ls []Balance) {
	slices.SortFunc(ls, func(a, b Balance) int {
		return cmp.Or(strings.Compare(a.Account, b.Account), strings.Compare(string(a.Currency), string(b.Currency)))
	})
}

// Compute is the trial balance of p from booked entries (of any period:
// those booked before p make the opening, those after p are ignored).
func Compute(p Period, entries []Entry) (TrialBalance, error) {
	sums := map[acctCur]*Sum{}
	tb := TrialBalance{Period: p}
	for _, e := range entries {
		if e.Booked.After(p) {
			continue
		}
		k := acctCur{e.Account, e.Currency}
		s := sums[k]
		if s == nil {
			s = &Sum{Account: e.Account, Currency: e.Currency}
			sums[k] = s
		}
		var ok bool
		switch {
		case e.Booked.Before(p):
			s.Opening, ok = add(s.Opening, e.Amount)
		case e.Amount >= 0:
			s.Debits, ok = add(s.Debits, e.Amount)
		default:
			s.Credits, ok = sub(s.Credits, e.Amount)
		}
		if !ok {
			return TrialBalance{}, fmt.Errorf("%w: %s/%s in %s", ErrOverflow, e.Account, e.Currency, p)
		}
		if e.Booked == p && e.Late {
			tb.Adjustments = append(tb.Adjustments, e)
		}
	}
	list := make([]Sum, 0, len(sums))
	for _, s := range sums {
		list = append(list, *s)
	}
	var err error
	tb.Lines, err = Lines(list)
	return tb, err
}

// hashVersion prefixes the hashed text: a change to the canonical form is
// a new version, never a silent change of old hashes.
const hashVersion = "onceledger/trial-balance/v1"

// Hash is the content hash of a period's figures: SHA-256 (hex) of a
// canonical text, one tab-separated line per account and currency in
// account, currency order. Anyone can recompute it from the
// period_balances rows:
//
//	onceledger/trial-balance/v1\nYYYY-MM\n
//	account\tcurrency\topening\tdebits\tcredits\tclosing\n ...
func Hash(p Period, lines []Balance) string {
	ls := slices.Clone(lines)
	sortLines(ls)
	var b strings.Builder
	b.WriteString(hashVersion + "\n" + p.String() + "\n")
	for _, l := range ls {
		b.WriteString(l.Account + "\t" + string(l.Currency) + "\t" +
			strconv.FormatInt(l.Opening, 10) + "\t" + strconv.FormatInt(l.Debits, 10) + "\t" +
			strconv.FormatInt(l.Credits, 10) + "\t" + strconv.FormatInt(l.Closing, 10) + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

func add(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

func sub(a, b int64) (int64, bool) {
	if b == math.MinInt64 {
		return 0, false
	}
	return add(a, -b)
}

// Frozen is a closed period's figures as frozen at its close.
type Frozen struct {
	Lines []Balance
	Hash  string
}

// Books is the whole booking process in memory: the calendar folded in
// feed order, each posting booked by the rule as it arrives, and each
// period's trial balance frozen when it closes. It keeps sums per period,
// account and currency, not entries, so `verify` can run it over the whole
// history to recompute the closed periods' hashes; the property tests use
// it as the model.
type Books struct {
	loc    *time.Location
	cal    Calendar
	sums   map[Period]map[acctCur]*Sum // Debits and Credits of entries booked into the period
	frozen map[Period]Frozen
}

type acctCur struct {
	account  string
	currency money.Currency
}

// NewBooks starts empty books in the reporting time zone loc.
func NewBooks(loc *time.Location) *Books {
	return &Books{loc: loc, sums: map[Period]map[acctCur]*Sum{}, frozen: map[Period]Frozen{}}
}

// Calendar is the calendar as folded so far.
func (b *Books) Calendar() Calendar { return b.cal }

// Apply folds a calendar event: a close freezes the period's trial
// balance (the first close also those of the earlier periods with
// entries), a reopen thaws it. A close in another zone than the books'
// (ErrZoneMismatch) means the entries so far were booked in the wrong zone.
func (b *Books) Apply(e Event) error {
	if c, ok := e.(Closed); ok && c.Zone != b.loc.String() {
		return fmt.Errorf("%w: %s was closed in %s, the books are kept in %s", ErrZoneMismatch, c.Period, c.Zone, b.loc)
	}
	first := b.cal.start.IsZero()
	if err := b.cal.Apply(e); err != nil {
		return err
	}
	p := e.PeriodOf()
	switch e.(type) {
	case Closed:
		// The first close starts the books: every earlier period with
		// entries closes with it, each with its own frozen figures.
		ps := []Period{p}
		if first {
			ps = append(slices.DeleteFunc(b.Periods(), func(q Period) bool { return !q.Before(p) }), p)
		}
		for _, q := range ps {
			tb, err := b.TrialBalance(q)
			if err != nil {
				return err
			}
			b.frozen[q] = Frozen{Lines: tb.Lines, Hash: Hash(q, tb.Lines)}
		}
	case Reopened:
		delete(b.frozen, p)
	}
	return nil
}

// Post books the postings of one event effective at t and returns the
// booked entries.
func (b *Books) Post(effective time.Time, ps []ledger.Posting) ([]Entry, error) {
	eff := Of(effective, b.loc)
	booked, late := b.cal.Book(eff)
	if len(ps) == 0 {
		return nil, nil // nothing booked: the period gets no entries
	}
	sums := b.sums[booked]
	if sums == nil {
		sums = map[acctCur]*Sum{}
		b.sums[booked] = sums
	}
	out := make([]Entry, len(ps))
	for i, p := range ps {
		out[i] = Entry{Posting: p, Effective: eff, Booked: booked, Late: late}
		k := acctCur{p.Account, p.Currency}
		s := sums[k]
		if s == nil {
			s = &Sum{Account: p.Account, Currency: p.Currency}
			sums[k] = s
		}
		var ok bool
		if p.Amount >= 0 {
			s.Debits, ok = add(s.Debits, p.Amount)
		} else {
			s.Credits, ok = sub(s.Credits, p.Amount)
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s/%s in %s", ErrOverflow, p.Account, p.Currency, booked)
		}
	}
	return out, nil
}

// Frozen returns the figures of the closed periods, as frozen at their
// (last) close.
func (b *Books) Frozen() map[Period]Frozen { return b.frozen }

// Periods are the periods entries were booked into, in order.
func (b *Books) Periods() []Period {
	out := make([]Period, 0, len(b.sums))
	for p := range b.sums {
		out = append(out, p)
	}
	slices.SortFunc(out, Period.Compare)
	return out
}

// TrialBalance computes p's trial balance from the entries booked so far
// (without adjustments: Books keeps no entries).
func (b *Books) TrialBalance(p Period) (TrialBalance, error) {
	all := map[acctCur]*Sum{}
	for q, sums := range b.sums {
		if q.After(p) {
			continue
		}
		for k, s := range sums {
			t := all[k]
			if t == nil {
				t = &Sum{Account: k.account, Currency: k.currency}
				all[k] = t
			}
			var ok bool
			if q == p {
				t.Debits, t.Credits = s.Debits, s.Credits
				ok = true
			} else if t.Opening, ok = add(t.Opening, s.Debits); ok {
				t.Opening, ok = add(t.Opening, -s.Credits)
			}
			if !ok {
				return TrialBalance{}, fmt.Errorf("%w: opening of %s/%s in %s", ErrOverflow, k.account, k.currency, p)
			}
		}
	}
	list := make([]Sum, 0, len(all))
	for _, s := range all {
		list = append(list, *s)
	}
	lines, err := Lines(list)
	return TrialBalance{Period: p, Lines: lines}, err
}
