package delivery

import (
	"fmt"
	"strconv"
	"time"

	"github.com/onceledger/onceledger/domain/bankline"
)

// KindBank is a delivery to a bank account's stream (Fact.Bank holds it):
// a booked statement line, a statement, or a payout the account expects
// (domain/bankline). Its Event's PaymentKey is the account's name and its
// stream the account's (bankline.Stream).
const KindBank Kind = "bank"

// Bank returns the delivery of in to the bank account named account, under
// dedupKey (a line's: the account and the line's identity, so that a
// re-import, an overlapping file, or a camt.054 then the day's camt.053
// are one delivery). raw is the entry as the file gave it, for the inbox.
func Bank(account, dedupKey, typ string, at time.Time, in bankline.Input, raw []byte) Event {
	ev := Event{
		Provider:   bankline.Provider,
		DedupKey:   dedupKey,
		Type:       typ,
		PaymentKey: account,
		OccurredAt: at,
		Raw:        raw,
		Facts:      []Fact{{Kind: KindBank, BusinessID: dedupKey, Bank: &in}},
	}
	ev.PayloadHash = ev.FactsHash()
	return ev
}

// BankInput returns the bank input of a bank delivery.
func (e Event) BankInput() (*bankline.Input, bool) {
	if len(e.Facts) == 1 && e.Facts[0].Kind == KindBank && e.Facts[0].Bank != nil {
		return e.Facts[0].Bank, true
	}
	return nil, false
}

func (e Event) isBank() bool { return len(e.Facts) > 0 && e.Facts[0].Kind == KindBank }

func (e Event) validateBank() error {
	in, ok := e.BankInput()
	if !ok {
		return fmt.Errorf("%w: a bank delivery holds exactly one bank fact", ErrMalformed)
	}
	if e.Provider != bankline.Provider {
		return fmt.Errorf("%w: a bank delivery's provider is %q", ErrMalformed, bankline.Provider)
	}
	if e.PaymentKey == "" {
		return fmt.Errorf("%w: bank account", ErrMissingField)
	}
	if in.Line != nil {
		if err := checkID("line key", in.Line.Key); err != nil {
			return err
		}
		if err := checkText("line text", in.Line.Text); err != nil {
			return err
		}
	}
	if in.Payout != nil {
		if err := checkID("payout id", in.Payout.ID); err != nil {
			return err
		}
	}
	if err := in.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// bankFacts is what a bank fact says, for FactsHash: a line's identity and
// money (not its text: a camt.054 and the camt.053 of one entry word it
// differently and are one fact), a statement's number and balances, a
// payout's amount and arrival.
func bankFacts(b []byte, in *bankline.Input) []byte {
	day := func(t time.Time) string { return t.UTC().Format(time.DateOnly) }
	switch {
	case in.Line != nil:
		l := in.Line
		b = field(b, "line")
		b = field(b, l.Key)
		b = field(b, strconv.FormatInt(l.Amount, 10))
		b = field(b, string(l.Currency))
		b = field(b, day(l.BookedOn))
		b = field(b, strconv.FormatBool(l.Reversal))
	case in.Statement != nil:
		s := in.Statement
		b = field(b, "statement")
		b = field(b, strconv.FormatInt(s.Seq, 10))
		b = field(b, strconv.FormatInt(s.Page, 10))
		b = field(b, day(s.Covers))
		for _, bal := range []*bankline.Balance{s.Opening, s.Closing} {
			if bal != nil {
				b = field(b, strconv.FormatInt(bal.Amount, 10)+"@"+day(bal.Date))
			}
		}
	case in.Payout != nil:
		p := in.Payout
		b = field(b, "payout")
		b = field(b, p.Key())
		b = field(b, strconv.FormatInt(p.Amount, 10))
		b = field(b, string(p.Currency))
		b = field(b, day(p.ArrivalOn))
		if p.Failed {
			b = field(b, "failed")
		}
	}
	return b
}
