package bankimport_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bankfile"
	"github.com/onceledger/onceledger/adapters/bankimport"
	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/bankline"
	"github.com/onceledger/onceledger/domain/bankstatement"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
)

// store is one event store with the ingest service serve builds over it,
// the read models and the projections over its feed.
type store struct {
	name string
	svc  *ingest.Service
	read interface {
		ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
	}
	reads *readmodel.Store
	proj  *projections.Service
}

// stores are both stores: Postgres, and EventStoreDB (its protocol double,
// esdbfake) with the inbox in Postgres, as serve runs them.
func stores(t *testing.T) []store {
	t.Helper()
	pool := pgtest.NewPool(t)
	events := postgres.NewEventStore(pool)
	dec := bankimport.Decider{Payments: ingest.PaymentDecider{}, ArrivalDays: 5}
	db := readmodel.New(pool)
	pg := store{name: "postgres", svc: ingest.New(postgres.NewJournal(pool, events), dec, ingest.Options{}), read: events,
		reads: db, proj: projections.NewService(events, db, nil)}
	fake := esdbfake.Start(t)
	es, err := esdb.Dial(fake.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = es.Close() })
	// Its projections read the EventStoreDB feed into a database of
	// their own (the Postgres store's read models are another feed's).
	edb := readmodel.New(pgtest.NewPool(t))
	ed := store{name: "esdb", svc: ingest.New(ingest.TwoPhase(postgres.NewInbox(pool), es), dec, ingest.Options{}), read: es,
		reads: edb, proj: projections.NewService(es, edb, nil)}
	return []store{pg, ed}
}

// payouts is a double of the payouts read model (bankimport.Payouts): the
// payouts revealed so far.
type payouts struct {
	mu   sync.Mutex
	list []bankline.Payout
}

func (p *payouts) UnbankedPayouts(context.Context) ([]bankline.Payout, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bankline.Payout(nil), p.list...), nil
}

func src(s string) bankimport.Source {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
}

// ledgerOf sums the postings of an account's stream and its open items.
func ledgerOf(t testing.TB, st store, account string) (map[string]int64, map[string]bool) {
	t.Helper()
	recs, err := st.read.ReadStream(context.Background(), bankstatement.Stream(account))
	require.NoError(t, err)
	bal, open := map[string]int64{}, map[string]bool{}
	for _, r := range recs {
		e, err := payment.Decode(r.Type, r.Data)
		require.NoError(t, err)
		for _, p := range payment.Postings(e) {
			bal[p.Account] += p.Amount
		}
		switch e := e.(type) {
		case payment.Flagged:
			open[e.Kind+" "+e.Key] = true
		case payment.Cleared:
			delete(open, e.Kind+" "+e.Key)
		}
	}
	return bal, open
}

const csvFile = "date,amount,currency,reference,description\n" +
	"2026-03-03,100.00,EUR,B-1,STRIPE po_1\n" +
	"2026-03-03,-2.50,EUR,B-2,FEE\n" +
	"2026-03-04,7.00,EUR,B-3,\n"

func TestImportTwiceChangesNothing(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			ps := &payouts{list: []bankline.Payout{{Provider: "stripe", ID: "po_1", Amount: 10000, Currency: "EUR", ArrivalOn: day("2026-03-02")}}}
			im := &bankimport.Importer{Ingest: st.svc, Payouts: ps}
			sum, err := im.Import(ctx, "twice-"+st.name, src(csvFile))
			require.NoError(t, err)
			assert.Equal(t, bankimport.Summary{Format: "csv", Lines: 3, New: 3, Payouts: 1}, sum)
			again, err := im.Import(ctx, "twice-"+st.name, src(csvFile))
			require.NoError(t, err)
			assert.Equal(t, bankimport.Summary{Format: "csv", Lines: 3, Duplicates: 3}, again)
			bal, open := ledgerOf(t, st, "twice-"+st.name)
			assert.Equal(t, int64(10450), bal["bank:twice-"+st.name])
			assert.Equal(t, int64(-10000), bal[ledger.BankPayouts])
			assert.Equal(t, int64(-450), bal["suspense:bank:twice-"+st.name])
			assert.Equal(t, map[string]bool{"unidentified_deposit ref:B-3": true}, open)
		})
	}
}

func TestRefusedFileRecordsNothing(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			im := &bankimport.Importer{Ingest: st.svc}
			bad := csvFile + "2026-03-05,1.001,EUR,B-4,\n"
			_, err := im.Import(context.Background(), "refused-"+st.name, src(bad))
			var pe *bankfile.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "line 5", pe.Pos)
			recs, err := st.read.ReadStream(context.Background(), bankstatement.Stream("refused-"+st.name))
			require.NoError(t, err)
			assert.Empty(t, recs)
		})
	}
}

func TestNotificationThenStatementIsOneLine(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			im := &bankimport.Importer{Ingest: st.svc}
			acct := "n54-" + st.name
			pending := entry{amount: 500, ref: "ACSR-1", pending: true}
			n054 := camt("camt.054", 0, time.Time{}, 0, entry{amount: 10000, ref: "ACSR-9", text: "first wording"}, pending)
			sum, err := im.Import(ctx, acct, src(n054))
			require.NoError(t, err)
			assert.Equal(t, 1, sum.New)
			assert.Equal(t, 1, sum.Pending)
			s053 := camt("camt.053", 4, day("2026-03-03"), 0, entry{amount: 10000, ref: "ACSR-9", text: "other wording"}, entry{amount: 500, ref: "ACSR-1"})
			sum, err = im.Import(ctx, acct, src(s053))
			require.NoError(t, err)
			assert.Equal(t, bankimport.Summary{Format: "camt.053", Lines: 2, New: 1, Duplicates: 1, Statements: 1}, sum)
			bal, _ := ledgerOf(t, st, acct)
			assert.Equal(t, int64(10500), bal["bank:"+acct])
		})
	}
}

func TestAccountName(t *testing.T) {
	im := &bankimport.Importer{}
	_, err := im.Import(context.Background(), "bad:name", src(csvFile))
	require.ErrorIs(t, err, bankimport.ErrAccount)
}

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

type entry struct {
	amount   int64 // signed minor units, EUR
	ref      string
	text     string
	pending  bool
	reversal bool
	booked   time.Time
}

// camt renders one camt document: for camt.053 a statement per day with
// its sequence number and balances that add up.
func camt(msg string, seq int64, on time.Time, opening int64, entries ...entry) string {
	return camtDoc(msg, []camtStmt{{seq: seq, on: on, opening: opening, entries: entries}})
}

type camtStmt struct {
	seq     int64
	on      time.Time
	opening int64
	entries []entry
}

func amt(v int64) (string, string) {
	ind := "CRDT"
	if v < 0 {
		ind, v = "DBIT", -v
	}
	return money.FormatMinor(v, "EUR"), ind
}

func camtDoc(msg string, stmts []camtStmt) string {
	var b strings.Builder
	root, item := "BkToCstmrStmt", "Stmt"
	if msg == "camt.054" {
		root, item = "BkToCstmrDbtCdtNtfctn", "Ntfctn"
	}
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:%s.001.08"><%s><GrpHdr><MsgId>M</MsgId><CreDtTm>2026-03-03T18:00:00</CreDtTm></GrpHdr>`, msg, root)
	for _, s := range stmts {
		fmt.Fprintf(&b, "<%s><Id>S%d</Id>", item, s.seq)
		if s.seq > 0 {
			fmt.Fprintf(&b, "<ElctrncSeqNb>%d</ElctrncSeqNb>", s.seq)
		}
		b.WriteString("<Acct><Id><IBAN>DE89370400440532013000</IBAN></Id><Ccy>EUR</Ccy></Acct>")
		closing := s.opening
		for _, e := range s.entries {
			if !e.pending {
				closing += e.amount
			}
		}
		if msg == "camt.053" {
			for _, bal := range []struct {
				code string
				v    int64
				d    time.Time
			}{{"OPBD", s.opening, s.on}, {"CLBD", closing, s.on}} {
				a, ind := amt(bal.v)
				fmt.Fprintf(&b, `<Bal><Tp><CdOrPrtry><Cd>%s</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">%s</Amt><CdtDbtInd>%s</CdtDbtInd><Dt><Dt>%s</Dt></Dt></Bal>`,
					bal.code, a, ind, bal.d.Format(time.DateOnly))
			}
		}
		for _, e := range s.entries {
			a, ind := amt(e.amount)
			sts := "BOOK"
			if e.pending {
				sts = "PDNG"
			}
			on := s.on
			if on.IsZero() {
				on = day("2026-03-03")
			}
			fmt.Fprintf(&b, `<Ntry><Amt Ccy="EUR">%s</Amt><CdtDbtInd>%s</CdtDbtInd>`, a, ind)
			if e.reversal {
				b.WriteString("<RvslInd>true</RvslInd>")
			}
			fmt.Fprintf(&b, "<Sts><Cd>%s</Cd></Sts><BookgDt><Dt>%s</Dt></BookgDt><AcctSvcrRef>%s</AcctSvcrRef>", sts, on.Format(time.DateOnly), e.ref)
			b.WriteString("<BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>RCDT</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd>")
			if e.text != "" {
				fmt.Fprintf(&b, "<NtryDtls><TxDtls><RmtInf><Ustrd>%s</Ustrd></RmtInf></TxDtls></NtryDtls>", e.text)
			}
			b.WriteString("</Ntry>")
		}
		fmt.Fprintf(&b, "</%s>", item)
	}
	fmt.Fprintf(&b, "</%s></Document>", root)
	return b.String()
}

func propertyChecks() int {
	if v, err := strconv.Atoi(os.Getenv("ONCELEDGER_BANK_PROPERTY_CHECKS")); err == nil && v > 0 {
		return v
	}
	return 6
}

// TestEntryTheGateRefusesIsRefusedWhole: an entry the inbox would refuse
// (a NUL in its text, a reference longer than an id may be) is bad input
// found by the validation pass, naming its line: nothing is recorded.
func TestEntryTheGateRefusesIsRefusedWhole(t *testing.T) {
	st := stores(t)[0]
	im := &bankimport.Importer{Ingest: st.svc}
	for name, bad := range map[string]string{
		"nul":  csvFile + "2026-03-05,1.00,EUR,B-9,a\x00b\n",
		"long": csvFile + "2026-03-05,1.00,EUR," + strings.Repeat("R", 600) + ",\n",
	} {
		acct := "gate-" + name
		_, err := im.Import(context.Background(), acct, src(bad))
		var pe *bankfile.ParseError
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, "line 5", pe.Pos, name)
		recs, err := st.read.ReadStream(context.Background(), bankstatement.Stream(acct))
		require.NoError(t, err)
		assert.Empty(t, recs, name)
	}
}

// TestOneBankAccountAFile: a file holding statements of several of the
// bank's accounts (BAI2 and MT940 files often do) is refused, naming the
// statement of the second account: one import is one bank account (its
// own sequence numbers, its own ledger account).
func TestOneBankAccountAFile(t *testing.T) {
	im := &bankimport.Importer{Ingest: stores(t)[0].svc}
	_, err := im.Import(context.Background(), "several", func() (io.ReadCloser, error) {
		return os.Open("../../docs/samples/bank/wolph-betterplace-sepa_mt9401.sta")
	})
	var pe *bankfile.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, ":25:", pe.Field)
	assert.Contains(t, err.Error(), "50880050/0194777100888")
}
