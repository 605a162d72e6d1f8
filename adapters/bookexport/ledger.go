package bookexport

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections/views"
)

// ledgerSink writes the plain-text accounting formats: beancount (a file
// bean-check accepts) and hledger (a journal `hledger check -s` accepts).
// One transaction per ledger event, its postings in order; accounts and
// commodities declared where first used (hledger's strict mode refuses
// undeclared ones); payment, payout and provider ids as metadata (hledger:
// tags).
type ledgerSink struct {
	w         *bufio.Writer
	name      func(string) (string, error)
	beancount bool
	zone      *time.Location
	opened    map[string]bool // account names declared
	commodity map[money.Currency]bool
	// The event being gathered: its postings arrive together.
	cur     []views.ExportEntry
	curID   uuid.UUID
	balance map[string]int64 // running balance per account and currency (beancount assertions)
	asserts []Assertion
}

func newLedgerSink(w *bufio.Writer, name func(string) (string, error), h header, beancount bool,
	asserts []Assertion) *ledgerSink {
	s := &ledgerSink{w: w, name: name, beancount: beancount, zone: h.zone, opened: map[string]bool{},
		commodity: map[money.Currency]bool{}, balance: map[string]int64{}, asserts: asserts}
	mark := ";"
	if beancount {
		mark = ";;"
	}
	fmt.Fprintf(w, "%s onceledger export: entries booked from %s to %s (exclusive), reporting zone %s\n",
		mark, h.from.Format(time.DateOnly), h.to.Format(time.DateOnly), h.zone)
	fmt.Fprintf(w, "%s dates are where each entry is booked: a late adjustment at the first day of the period it is booked into\n\n", mark)
	if beancount {
		fmt.Fprintf(w, "option \"title\" \"onceledger %s..%s\"\n\n", h.from.Format(time.DateOnly), h.to.Format(time.DateOnly))
	} else {
		// Amounts are written with a decimal point and never a thousands
		// separator: say so, so that 1.000 BHD is never read as 1000.
		w.WriteString("decimal-mark .\n\n")
	}
	return s
}

// declare writes the account and commodity declarations an entry needs
// before it.
func (s *ledgerSink) declare(date, account string, c money.Currency) (string, error) {
	n, err := s.name(account)
	if err != nil {
		return "", err
	}
	if !s.commodity[c] {
		s.commodity[c] = true
		if s.beancount {
			fmt.Fprintf(s.w, "%s commodity %s\n", date, c)
		} else {
			// hledger wants a decimal mark in the sample, even for a
			// currency without minor units ("0." JPY).
			sample := money.FormatMinor(0, c)
			if c.Exponent() == 0 {
				sample += "."
			}
			fmt.Fprintf(s.w, "commodity %s %s\n", sample, c)
		}
	}
	if !s.opened[n] {
		s.opened[n] = true
		if s.beancount {
			fmt.Fprintf(s.w, "%s open %s\n", date, n)
		} else {
			fmt.Fprintf(s.w, "account %s\n", n)
		}
	}
	return n, nil
}

func (s *ledgerSink) opening(date string, open []views.ExportOpening) error {
	for _, o := range open {
		if o.Account == OpeningBalances {
			// Its balance is the others' counterpart (every currency
			// sums to zero): carried by their transactions.
			continue
		}
		n, err := s.declare(date, o.Account, o.Currency)
		if err != nil {
			return err
		}
		eq, err := s.declare(date, OpeningBalances, o.Currency)
		if err != nil {
			return err
		}
		amt := money.FormatMinor(o.Balance, o.Currency)
		neg := money.FormatMinor(-o.Balance, o.Currency)
		if s.beancount {
			fmt.Fprintf(s.w, "\n%s * \"onceledger\" \"opening balance\"\n  %s  %s %s\n  %s  %s %s\n",
				date, n, amt, o.Currency, eq, neg, o.Currency)
		} else {
			fmt.Fprintf(s.w, "\n%s * onceledger | opening balance\n    %s  %s %s\n    %s  %s %s\n",
				date, n, amt, o.Currency, eq, neg, o.Currency)
		}
		s.balance[o.Account+"\x00"+string(o.Currency)] += o.Balance
		s.balance[OpeningBalances+"\x00"+string(o.Currency)] -= o.Balance
	}
	return nil
}

func (s *ledgerSink) entry(e views.ExportEntry) error {
	if len(s.cur) > 0 && e.EventID != s.curID {
		if err := s.flush(); err != nil {
			return err
		}
	}
	if len(s.cur) == 0 {
		if err := s.assertBefore(e.Date); err != nil {
			return err
		}
	}
	s.curID = e.EventID
	s.cur = append(s.cur, e)
	return nil
}

// flush writes the gathered event as one transaction.
func (s *ledgerSink) flush() error {
	if len(s.cur) == 0 {
		return nil
	}
	first := s.cur[0]
	names := make([]string, len(s.cur))
	for i, p := range s.cur {
		n, err := s.declare(first.Date, p.Account, p.Currency)
		if err != nil {
			return err
		}
		names[i] = n
	}
	what := first.EventType
	if id := paymentID(first); id != "" {
		what += " " + id
	} else if id := payoutID(first); id != "" {
		what += " " + id
	}
	if first.LateAdjustment {
		what += fmt.Sprintf(" (late: effective %s, adjusts %s)", first.EffectiveAt.In(s.zone).Format(time.DateOnly), first.Adjusts)
	}
	meta := [][2]string{{"event-id", first.EventID.String()}, {"provider", first.Provider}, {"stream", first.StreamID}}
	if id := paymentID(first); id != "" {
		meta = append(meta, [2]string{"payment-id", id})
	}
	if id := payoutID(first); id != "" {
		meta = append(meta, [2]string{"payout-id", id})
	}
	meta = append(meta, [2]string{"effective-at", first.EffectiveAt.UTC().Format(time.RFC3339Nano)})
	if s.beancount {
		fmt.Fprintf(s.w, "\n%s * %s %s\n", first.Date, beanString(first.Provider), beanString(what))
		for _, m := range meta {
			fmt.Fprintf(s.w, "  %s: %s\n", m[0], beanString(m[1]))
		}
	} else {
		fmt.Fprintf(s.w, "\n%s * %s | %s\n", first.Date, ledgerText(first.Provider), ledgerText(what))
		for _, m := range meta {
			fmt.Fprintf(s.w, "    ; %s: %s\n", m[0], ledgerTag(m[1]))
		}
	}
	indent := "  "
	if !s.beancount {
		indent = "    "
	}
	for i, p := range s.cur {
		fmt.Fprintf(s.w, "%s%s  %s %s\n", indent, names[i], money.FormatMinor(p.Amount, p.Currency), p.Currency)
		s.balance[p.Account+"\x00"+string(p.Currency)] += p.Amount
	}
	s.cur = s.cur[:0]
	return nil
}

// assertBefore writes the assertions dated on or before date, before the
// first entry of date: a beancount balance directive checks the balance
// at the start of its day.
func (s *ledgerSink) assertBefore(date string) error {
	for len(s.asserts) > 0 {
		a := s.asserts[0]
		d := a.AsOf.In(s.zone).Format(time.DateOnly)
		if date != "" && d > date {
			return nil
		}
		s.asserts = s.asserts[1:]
		if err := s.assert(a, d); err != nil {
			return err
		}
	}
	return nil
}

// assert writes one assertion: a balance directive (hledger: a balance
// assertion on a posting) when it was made at a day boundary and the
// export's own balance at that moment agrees (the ledger's as of then,
// unless a late adjustment is dated elsewhere in the export: the file must
// pass bean-check and hledger check); else a comment saying why not, from
// the export's own figures alone.
func (s *ledgerSink) assert(a Assertion, date string) error {
	stated := money.FormatMinor(a.Stated, a.Currency)
	boundary := a.AsOf.Equal(midnight(a.AsOf, s.zone))
	running := s.balance[a.Account+"\x00"+string(a.Currency)]
	n, err := s.name(a.Account)
	if err != nil {
		return err
	}
	who := beanComment(a.Provider)
	if a.Source != "" {
		who += ", " + beanComment(a.Source)
	}
	switch {
	case boundary && running == a.Stated && s.beancount:
		if _, err := s.declare(date, a.Account, a.Currency); err != nil {
			return err
		}
		// An explicit tolerance of zero: by default beancount lets a
		// balance pass within one minor unit of the directive's
		// precision (96.81 passes "96.80 USD").
		fmt.Fprintf(s.w, "\n%s balance %s  %s ~ %s %s\n", date, n, stated, money.FormatMinor(0, a.Currency), a.Currency)
	case boundary && running == a.Stated:
		// hledger asserts on a posting, after the postings before it of
		// the same date: a transaction of the last day before the
		// boundary, written after that day's entries.
		day, err := time.Parse(time.DateOnly, date)
		if err != nil {
			return err
		}
		prev := day.AddDate(0, 0, -1).Format(time.DateOnly)
		if _, err := s.declare(prev, a.Account, a.Currency); err != nil {
			return err
		}
		fmt.Fprintf(s.w, "\n%s * %s | balance stated at the end of the day\n    %s  %s %s = %s %s\n",
			prev, ledgerText(who), n, money.FormatMinor(0, a.Currency), a.Currency, stated, a.Currency)
	case !boundary:
		fmt.Fprintf(s.w, "\n; %s balance assertion (%s) not at a day boundary: %s %s %s as of %s\n",
			date, who, n, stated, a.Currency, a.AsOf.UTC().Format(time.RFC3339Nano))
	default:
		// Whether the ledger agreed by effective time is left unsaid: a
		// late fact changes that (the read model's figure follows it),
		// and a closed period's export must not change with it.
		fmt.Fprintf(s.w, "\n; %s balance assertion (%s) that differs from the balance at this export's dates: %s %s %s, here %s %s\n",
			date, who, n, stated, a.Currency, money.FormatMinor(running, a.Currency), a.Currency)
	}
	return nil
}

func (s *ledgerSink) finish() error {
	if err := s.flush(); err != nil {
		return err
	}
	return s.assertBefore("")
}

// paymentID is the payment an entry's stream belongs to ("" for others).
func paymentID(e views.ExportEntry) string {
	if id, ok := strings.CutPrefix(e.StreamID, delivery.PaymentStreamPrefix+e.Provider+"-"); ok {
		return id
	}
	return ""
}

// payoutID is the payout an entry's stream belongs to ("" for others).
func payoutID(e views.ExportEntry) string {
	if id, ok := strings.CutPrefix(e.StreamID, delivery.PayoutStreamPrefix+e.Provider+"-"); ok {
		return id
	}
	return ""
}

// beanString quotes s as a beancount string. The ids are the providers'
// and the accountant's key back to them, so they are kept exactly: '"'
// and '\' are escaped (beancount's strings read \" and \\ back as " and
// \). A line break or other control character, which no provider's id
// holds, becomes a space: beancount limits a string's lines
// (long_string_maxlines), and an entry stays one line of text.
func beanString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// beanComment is s on one comment line.
func beanComment(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// ledgerText is s in an hledger description: one line, no ';' (a comment
// would start there).
func ledgerText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ';' || r == '|' || r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// ledgerTag is s as an hledger tag value: a ',' would end it.
func ledgerTag(s string) string {
	return strings.ReplaceAll(ledgerText(s), ",", " ")
}
