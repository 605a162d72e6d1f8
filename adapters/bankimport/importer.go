package bankimport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/onceledger/onceledger/adapters/bankfile"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/bankline"
	"github.com/onceledger/onceledger/domain/bankstatement"
	"github.com/onceledger/onceledger/domain/delivery"
)

// ErrAccount: the account name is not one the ledger can name an account
// by (bank:NAME).
var ErrAccount = errors.New("invalid bank account name")

// accountName is what bank:NAME may be (domain/assertion's chart of
// accounts: lower case), "payouts" aside: bank:payouts is the money in
// transit.
var accountName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// CheckAccount validates a bank account's name.
func CheckAccount(name string) error {
	if !accountName.MatchString(name) || name == "payouts" {
		return fmt.Errorf("%w: %q (lower-case letters, digits, '_', '.', '-'; up to 64; not \"payouts\": bank:payouts is the money in transit)", ErrAccount, name)
	}
	return nil
}

// Ingester records deliveries through the inbox gate (ingest.Service).
type Ingester interface {
	Ingest(ctx context.Context, ev delivery.Event) (ingest.Result, error)
	IngestBatch(ctx context.Context, evs []delivery.Event) ([]ingest.Result, error)
}

// Payouts is the port to the payouts the ledger knows paid (the payouts
// read model): those not banked yet, with the provider's arrival date where
// it gives one, else the date of the payout's event; Failed for those the
// provider since said failed.
type Payouts interface {
	UnbankedPayouts(ctx context.Context) ([]bankline.Payout, error)
}

// Asserter records stated balances as balance assertions
// (operations.Balances.State): a statement's opening and closing balances
// are assertions on bank:NAME, provider "bank".
type Asserter interface {
	State(ctx context.Context, s assertion.Statement) (int, error)
}

// Importer imports statement files into bank accounts.
type Importer struct {
	Ingest Ingester
	// Asserter, when set, records each statement's opening and closing
	// balances as balance assertions (compared with the ledger's bank:NAME
	// by booking date); nil: they are kept with the statement only.
	Asserter Asserter
	// Payouts, when set, are told to the account before its lines (and
	// by Match), so that a line finds the payout it banks.
	Payouts Payouts
	// Batch is how many deliveries are recorded in one unit of work
	// (default 200, as settlement imports).
	Batch int
}

// Summary is what an import did, as for settlement files: Lines = New +
// Duplicates + Conflicts (booked entries); Pending entries (camt.054 PDNG)
// record nothing and are counted apart.
type Summary struct {
	Format     string `json:"format"`
	Lines      int    `json:"lines"`
	New        int    `json:"new"`
	Duplicates int    `json:"duplicates"`
	Conflicts  int    `json:"conflicts"`
	Pending    int    `json:"pending"`
	Statements int    `json:"statements"`
	Payouts    int    `json:"payouts"` // payouts newly told to the account
}

// Source opens the file; Import reads it twice (validate, then record).
type Source func() (io.ReadCloser, error)

// Import validates the file whole (a *bankfile.ParseError names line or
// XML path and field; nothing is recorded), then records its booked
// entries and statements into account. With another error (storage) part
// may be recorded: importing the file again completes it.
func (im *Importer) Import(ctx context.Context, account string, src Source) (Summary, error) {
	if err := CheckAccount(account); err != nil {
		return Summary{}, err
	}
	r, err := src()
	if err != nil {
		return Summary{}, err
	}
	format, err := bankfile.Parse(r, validator(account))
	_ = r.Close()
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Format: string(format)}
	if sum.Payouts, err = im.Match(ctx, account); err != nil {
		return sum, err
	}
	r, err = src()
	if err != nil {
		return sum, err
	}
	defer r.Close()
	rec := &recorder{im: im, ctx: ctx, account: account, sum: &sum}
	if _, err := bankfile.Parse(r, bankfile.Sink{Entry: rec.entry, End: rec.end}); err != nil {
		return sum, err
	}
	return sum, rec.flush()
}

// accountField names where each format states the bank's account.
var accountField = map[bankfile.Format]string{bankfile.Camt053: "Acct", bankfile.Camt054: "Acct", bankfile.MT940: ":25:",
	bankfile.BAI2: "03 account"}

// validator checks each booked entry and statement as the delivery the
// gate will be given (delivery.Event.Validate), so that what the inbox
// would refuse (a NUL in a text, a reference longer than an id may be) is
// bad input naming its line, found before anything is recorded; and that
// the file's statements are of one bank account (BAI2 and MT940 files
// often hold several: each is its own account here, with its own
// sequence numbers).
func validator(account string) bankfile.Sink {
	var first *bankfile.Statement
	return bankfile.Sink{
		Begin: func(st *bankfile.Statement) error {
			if first == nil {
				c := *st
				first = &c
				return nil
			}
			if st.Account != first.Account {
				return &bankfile.ParseError{Pos: st.Pos, Field: accountField[st.Format], Err: fmt.Errorf(
					"a statement of the bank's account %q after one of %q (%s): a file is imported into one bank account; split it by account",
					st.Account, first.Account, first.Pos)}
			}
			return nil
		},
		Entry: func(st *bankfile.Statement, e bankfile.Entry) error {
			if !e.Booked {
				return nil
			}
			if err := LineDelivery(account, st.Format, st, e).Validate(); err != nil {
				return &bankfile.ParseError{Pos: e.Pos, Field: "entry", Err: err}
			}
			return nil
		},
		End: func(st *bankfile.Statement) error {
			if err := StatementDelivery(account, st, time.Unix(0, 0).UTC()).Validate(); err != nil {
				return &bankfile.ParseError{Pos: st.Pos, Field: "statement", Err: err}
			}
			return nil
		},
	}
}

// Match tells account the payouts the ledger knows unbanked (those it
// knows already are duplicates at the gate), so that lines waiting in
// suspense find them; it returns how many were new.
func (im *Importer) Match(ctx context.Context, account string) (int, error) {
	if err := CheckAccount(account); err != nil {
		return 0, err
	}
	if im.Payouts == nil {
		return 0, nil
	}
	ps, err := im.Payouts.UnbankedPayouts(ctx)
	if err != nil {
		return 0, fmt.Errorf("payouts: %w", err)
	}
	// In sets, as the lines: the payouts told before are duplicates at
	// the gate, one multi-row insert a set.
	n, size := 0, im.batch()
	for i := 0; i < len(ps); i += size {
		set := ps[i:min(i+size, len(ps))]
		evs := make([]delivery.Event, len(set))
		for j, p := range set {
			evs[j] = PayoutDelivery(account, p)
		}
		res, err := im.Ingest.IngestBatch(ctx, evs)
		for _, r := range res {
			if r.Outcome == ingest.Accepted {
				n++
			}
		}
		if err != nil {
			return n, fmt.Errorf("payouts: %w", err)
		}
	}
	return n, nil
}

func (im *Importer) batch() int {
	if im.Batch <= 0 {
		return 200
	}
	return im.Batch
}

// PayoutDelivery is the delivery telling account about payout p. Its key
// names the references it tells (a digest of its trace id, descriptor and
// reference), so that a payout told again with a trace id learned since is
// a new delivery, and told again with the same, a duplicate.
func PayoutDelivery(account string, p bankline.Payout) delivery.Event {
	raw, _ := json.Marshal(p) // the inbox keeps what was delivered
	key, typ := "payout:"+account+":"+p.Key(), "bank.payout"
	if p.TraceID != "" || p.Descriptor != "" || p.Reference != "" {
		sum := sha256.Sum256([]byte(p.TraceID + "\x00" + p.Descriptor + "\x00" + p.Reference))
		key += ":refs:" + hex.EncodeToString(sum[:8])
	}
	if p.Failed {
		key, typ = key+":failed", "bank.payout_failed"
	}
	return delivery.Bank(account, key, typ, p.ArrivalOn, bankline.Input{Payout: &p}, raw)
}

// LineDelivery is the delivery of a booked entry of account. Its key is
// the account and the entry's identity (the bank's reference), whatever
// file or format it came in.
func LineDelivery(account string, format bankfile.Format, st *bankfile.Statement, e bankfile.Entry) delivery.Event {
	l := bankline.Line{Key: e.Key, Reference: e.Ref, Format: string(format), Statement: st.ID, BookedOn: e.BookedOn,
		ValueOn: e.ValueOn, Amount: e.Amount, Currency: e.Currency, Reversal: e.Reversal, Code: e.Code, Text: e.Text}
	raw, _ := json.Marshal(l)
	return delivery.Bank(account, "line:"+account+":"+e.Key, "bank.line", e.BookedOn, bankline.Input{Line: &l}, raw)
}

// StatementDelivery is the delivery of a statement's header and balances.
func StatementDelivery(account string, st *bankfile.Statement, covers time.Time) delivery.Event {
	s := bankline.Statement{Format: string(st.Format), ID: st.ID, Seq: st.Seq, Page: st.Page, Currency: st.Currency,
		Covers: covers, Entries: st.Entries}
	if b := st.Opening; b != nil {
		s.Opening = &bankline.Balance{Amount: b.Amount, Date: b.Date, Code: b.Code}
	}
	if b := st.Closing; b != nil {
		s.Closing = &bankline.Balance{Amount: b.Amount, Date: b.Date, Code: b.Code}
	}
	key := "stmt:" + account + ":" + string(st.Format) + ":" + st.ID + ":" + strconv.FormatInt(st.Seq, 10) + ":" +
		strconv.FormatInt(st.Page, 10) + ":" + covers.Format(time.DateOnly)
	raw, _ := json.Marshal(s)
	return delivery.Bank(account, key, "bank.statement", covers, bankline.Input{Statement: &s}, raw)
}

// recorder records a file's deliveries in sets, in file order.
type recorder struct {
	im      *Importer
	ctx     context.Context
	account string
	sum     *Summary
	batch   []delivery.Event
	lines   []bool // batch[i] is a line (counted in the summary)
	latest  time.Time
}

func (r *recorder) entry(st *bankfile.Statement, e bankfile.Entry) error {
	if !e.Booked {
		r.sum.Pending++ // a pending entry records nothing
		return nil
	}
	if e.BookedOn.After(r.latest) {
		r.latest = e.BookedOn
	}
	return r.add(LineDelivery(r.account, st.Format, st, e), true)
}

func (r *recorder) end(st *bankfile.Statement) error {
	if st.Format == bankfile.Camt054 || st.Format == bankfile.CSV {
		return nil // notifications and CSV state no statement
	}
	covers := r.latest
	if st.Closing != nil {
		covers = st.Closing.Date
	}
	if covers.IsZero() {
		return nil
	}
	r.sum.Statements++
	ev := StatementDelivery(r.account, st, covers)
	if err := r.add(ev, false); err != nil {
		return err
	}
	return r.assert(st, ev.DedupKey)
}

// assert states a statement's balances, compared by booking date: the
// opening balance of day D with the lines booked before D (as of the day
// before: its entries' effective_at is their booking date, midnight UTC,
// and an assertion counts the entries at or before its as_of), the
// closing balance of D with those booked on or before D. camt's OPBD is
// the balance at the beginning of its date; PRCD, MT940's :60F:/:60M:
// and the BAI2 opening (dated the day before) are the close of theirs.
func (r *recorder) assert(st *bankfile.Statement, key string) error {
	if r.im.Asserter == nil || st.Currency == "" || (st.Opening == nil && st.Closing == nil) {
		return nil
	}
	var pts []assertion.Point
	if b := st.Opening; b != nil {
		asOf := b.Date
		if b.Code == "OPBD" {
			asOf = asOf.AddDate(0, 0, -1)
		}
		pts = append(pts, assertion.Point{Key: key + ":opening", AsOf: asOf, Amount: b.Amount})
	}
	if b := st.Closing; b != nil {
		pts = append(pts, assertion.Point{Key: key + ":closing", AsOf: b.Date, Amount: b.Amount})
	}
	_, err := r.im.Asserter.State(r.ctx, assertion.Statement{Provider: assertion.BankProvider,
		Account: bankstatement.Account(r.account), Currency: st.Currency,
		Source: fmt.Sprintf("bank statement %s %s of %s", st.Format, st.ID, r.account), Points: pts})
	if err != nil {
		return fmt.Errorf("statement %s balances: %w", st.ID, err)
	}
	return nil
}

func (r *recorder) add(ev delivery.Event, line bool) error {
	r.batch = append(r.batch, ev)
	r.lines = append(r.lines, line)
	if len(r.batch) >= r.im.batch() {
		return r.flush()
	}
	return nil
}

func (r *recorder) flush() error {
	if len(r.batch) == 0 {
		return nil
	}
	res, err := r.im.Ingest.IngestBatch(r.ctx, r.batch)
	for i, x := range res {
		if !r.lines[i] || x.Outcome == "" {
			continue
		}
		r.sum.Lines++
		switch {
		case x.Outcome == ingest.Duplicate && x.Conflict:
			r.sum.Conflicts++
		case x.Outcome == ingest.Duplicate:
			r.sum.Duplicates++
		default:
			r.sum.New++
		}
	}
	r.batch, r.lines = r.batch[:0], r.lines[:0]
	if err != nil {
		var be *ingest.BatchError
		if errors.As(err, &be) {
			return fmt.Errorf("entry %d of the set: %w", be.At, be.Err)
		}
		return err
	}
	return nil
}
