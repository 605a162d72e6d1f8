package bankfile_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bankfile"
	"github.com/onceledger/onceledger/domain/money"
)

func parseString(t testing.TB, s string) (collected, error) {
	t.Helper()
	var c collected
	var err error
	c.format, err = bankfile.Parse(strings.NewReader(s), bankfile.Sink{
		Entry: func(_ *bankfile.Statement, e bankfile.Entry) error { c.entries = append(c.entries, e); return nil },
		End:   func(s *bankfile.Statement) error { c.statements = append(c.statements, *s); return nil },
	})
	return c, err
}

// refused asserts a *bankfile.ParseError at pos naming field.
func refused(t *testing.T, err error, pos, field, words string) {
	t.Helper()
	var pe *bankfile.ParseError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, bankfile.ErrMalformed)
	assert.Equal(t, pos, pe.Pos, "%v", err)
	assert.Equal(t, field, pe.Field, "%v", err)
	assert.Contains(t, err.Error(), words)
}

type camtEntry struct {
	amt, ind, sts, ref, booked, ccy, text string
	reversal                              bool
}

// camt053 builds a camt.053 statement of version v (2…13) with the given
// balances and entries; summary, when not "", is inserted as TxsSummry.
func camt(msg string, v int, seq int, opening, closing string, summary string, entries ...camtEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:%s.001.%02d">`, msg, v)
	root, item := "BkToCstmrStmt", "Stmt"
	if msg == "camt.054" {
		root, item = "BkToCstmrDbtCdtNtfctn", "Ntfctn"
	}
	fmt.Fprintf(&b, "<%s><GrpHdr><MsgId>M1</MsgId><CreDtTm>2026-03-03T18:00:00</CreDtTm></GrpHdr><%s><Id>S%d</Id>", root, item, seq)
	if seq > 0 {
		fmt.Fprintf(&b, "<ElctrncSeqNb>%d</ElctrncSeqNb>", seq)
	}
	b.WriteString("<Acct><Id><IBAN>DE89370400440532013000</IBAN></Id><Ccy>EUR</Ccy></Acct>")
	bal := func(code, v string) {
		ind := "CRDT"
		if strings.HasPrefix(v, "-") {
			ind, v = "DBIT", v[1:]
		}
		fmt.Fprintf(&b, `<Bal><Tp><CdOrPrtry><Cd>%s</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">%s</Amt><CdtDbtInd>%s</CdtDbtInd><Dt><Dt>2026-03-03</Dt></Dt></Bal>`, code, v, ind)
	}
	if opening != "" {
		bal("OPBD", opening)
	}
	if closing != "" {
		bal("CLBD", closing)
	}
	b.WriteString(summary)
	for _, e := range entries {
		ccy := e.ccy
		if ccy == "" {
			ccy = "EUR"
		}
		sts := "<Sts>" + e.sts + "</Sts>"
		if v >= 8 {
			sts = "<Sts><Cd>" + e.sts + "</Cd></Sts>"
		}
		fmt.Fprintf(&b, `<Ntry><NtryRef>1</NtryRef><Amt Ccy="%s">%s</Amt><CdtDbtInd>%s</CdtDbtInd>`, ccy, e.amt, e.ind)
		if e.reversal {
			b.WriteString("<RvslInd>true</RvslInd>")
		}
		b.WriteString(sts)
		if e.booked != "" {
			fmt.Fprintf(&b, "<BookgDt><Dt>%s</Dt></BookgDt>", e.booked)
		}
		if e.ref != "" {
			fmt.Fprintf(&b, "<AcctSvcrRef>%s</AcctSvcrRef>", e.ref)
		}
		b.WriteString("<BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>RCDT</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd>")
		if e.text != "" {
			fmt.Fprintf(&b, "<NtryDtls><TxDtls><RmtInf><Ustrd>%s</Ustrd></RmtInf></TxDtls></NtryDtls>", e.text)
		}
		b.WriteString("</Ntry>")
	}
	fmt.Fprintf(&b, "</%s></%s></Document>\n", item, root)
	return b.String()
}

var (
	credit = camtEntry{amt: "100.00", ind: "CRDT", sts: "BOOK", ref: "BANK-1", booked: "2026-03-03", text: "STRIPE PAYOUT po_1ABC"}
	debit  = camtEntry{amt: "30.50", ind: "DBIT", sts: "BOOK", ref: "BANK-2", booked: "2026-03-03"}
)

func TestCamtEveryVersion(t *testing.T) {
	for v := 2; v <= 13; v++ {
		t.Run(fmt.Sprintf("053.%02d", v), func(t *testing.T) {
			c, err := parseString(t, camt("camt.053", v, 7, "10.00", "79.50", "", credit, debit))
			require.NoError(t, err)
			assert.Equal(t, bankfile.Camt053, c.format)
			require.Len(t, c.statements, 1)
			st := c.statements[0]
			assert.Equal(t, int64(7), st.Seq)
			assert.Equal(t, money.Currency("EUR"), st.Currency)
			assert.Equal(t, int64(1000), st.Opening.Amount)
			assert.Equal(t, int64(7950), st.Closing.Amount)
			require.Len(t, c.entries, 2)
			assert.Equal(t, "ref:BANK-1", c.entries[0].Key)
			assert.Equal(t, int64(10000), c.entries[0].Amount)
			assert.Equal(t, int64(-3050), c.entries[1].Amount)
			assert.True(t, c.entries[0].Booked)
			assert.Equal(t, "STRIPE PAYOUT po_1ABC", c.entries[0].Text)
			assert.Equal(t, "PMNT/RCDT/ESCT", c.entries[0].Code)
		})
		t.Run(fmt.Sprintf("054.%02d", v), func(t *testing.T) {
			pending := credit
			pending.sts, pending.booked = "PDNG", ""
			c, err := parseString(t, camt("camt.054", v, 0, "", "", "", credit, pending))
			require.NoError(t, err)
			assert.Equal(t, bankfile.Camt054, c.format)
			require.Len(t, c.entries, 2)
			assert.True(t, c.entries[0].Booked)
			assert.False(t, c.entries[1].Booked)
		})
	}
}

func TestCamtRefusals(t *testing.T) {
	const stmt = "/Document/BkToCstmrStmt/Stmt[1]"
	for _, tc := range []struct {
		name, doc, pos, field, words string
	}{
		{"sums disagree", camt("camt.053", 2, 1, "10.00", "80.00", "", credit, debit), stmt, "Bal", "the closing balance (CLBD) says 80.00"},
		{"no closing", camt("camt.053", 4, 1, "10.00", "", "", credit), stmt, "Bal", "no closing booked balance"},
		{"no opening", camt("camt.053", 4, 1, "", "110.00", "", credit), stmt, "Bal", "no opening booked balance"},
		{"more decimals than the currency", camt("camt.053", 2, 1, "10.00", "110.001", "", credit), stmt + "/Bal[2]/Amt", "Amt", "3 decimal places"},
		{"entry currency not declared", camt("camt.053", 2, 1, "10.00", "110.00", "", camtEntry{amt: "100.00", ind: "CRDT", sts: "BOOK", booked: "2026-03-03", ccy: "USD"}),
			stmt + "/Ntry[1]/Amt", "Ccy", "an entry in USD; the statement declares EUR"},
		{"unsupported version", camt("camt.053", 14, 1, "10.00", "110.00", "", credit), "/Document", "xmlns", "not one of .001.02 to .001.13"},
		{"summary count", camt("camt.053", 2, 1, "10.00", "110.00", "<TxsSummry><TtlNtries><NbOfNtries>2</NbOfNtries></TtlNtries></TxsSummry>", credit),
			stmt + "/TxsSummry/TtlNtries/NbOfNtries", "NbOfNtries", "says 2 entries, the statement has 1"},
		{"summary net", camt("camt.053", 8, 1, "10.00", "110.00", "<TxsSummry><TtlNtries><TtlNetNtry><Amt>99.00</Amt><CdtDbtInd>CRDT</CdtDbtInd></TtlNetNtry></TtlNtries></TxsSummry>", credit),
			stmt + "/TxsSummry/TtlNtries/TtlNetNtry/Amt", "TtlNetNtry/Amt", "says a net of 99.00, the entries net 100.00"},
		{"summary credits", camt("camt.053", 8, 1, "10.00", "110.00", "<TxsSummry><TtlCdtNtries><NbOfNtries>1</NbOfNtries><Sum>10.00</Sum></TtlCdtNtries></TxsSummry>", credit),
			stmt + "/TxsSummry/TtlCdtNtries/Sum", "Sum", "says 10.00, the entries sum to 100.00"},
		{"bad status", camt("camt.053", 2, 1, "10.00", "110.00", "", camtEntry{amt: "100.00", ind: "CRDT", sts: "DONE", booked: "2026-03-03"}),
			stmt + "/Ntry[1]/Sts", "Sts", `"DONE" is not an entry status`},
		{"malformed XML", `<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt><Stmt></BkToCstmrStmt>`,
			"line 1", "", "malformed XML"},
		{"DTD", `<?xml version="1.0"?><!DOCTYPE Document [<!ENTITY x SYSTEM "file:///etc/passwd">]><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"></Document>`,
			"/", "", "a DTD or directive"},
		{"undeclared entity", `<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.02"><BkToCstmrStmt><Stmt><Id>&x;</Id></Stmt></BkToCstmrStmt></Document>`,
			"/Document/BkToCstmrStmt/Stmt[1]/Id", "", "invalid character entity &x;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseString(t, tc.doc)
			refused(t, err, tc.pos, tc.field, tc.words)
			assert.Empty(t, c.statements, "a refused statement never ends")
		})
	}
}

func TestCamtPendingAndReversal(t *testing.T) {
	pending := camtEntry{amt: "5.00", ind: "CRDT", sts: "PDNG", ref: "P-1"}
	rev := camtEntry{amt: "100.00", ind: "DBIT", sts: "BOOK", ref: "BANK-9", booked: "2026-03-03", reversal: true}
	c, err := parseString(t, camt("camt.053", 6, 3, "10.00", "10.00", "", credit, pending, rev))
	require.NoError(t, err, "a pending entry is not part of the booked sum")
	require.Len(t, c.entries, 3)
	assert.False(t, c.entries[1].Booked)
	assert.True(t, c.entries[2].Reversal)
	assert.Equal(t, int64(-10000), c.entries[2].Amount)
}

func TestCamtKeyWithoutAcctSvcrRef(t *testing.T) {
	// NtryRef ("1" in every entry here) is never the identity: two equal
	// entries without AcctSvcrRef are two lines, told apart by their
	// occurrence on their booking day.
	e := camtEntry{amt: "1.00", ind: "CRDT", sts: "BOOK", booked: "2026-03-03"}
	c, err := parseString(t, camt("camt.053", 2, 1, "0.00", "2.00", "", e, e))
	require.NoError(t, err)
	require.Len(t, c.entries, 2)
	assert.NotEqual(t, c.entries[0].Key, c.entries[1].Key)
	assert.True(t, strings.HasPrefix(c.entries[0].Key, "cols:"))
	again, err := parseString(t, camt("camt.053", 2, 1, "0.00", "2.00", "", e, e))
	require.NoError(t, err)
	assert.Equal(t, c.entries[0].Key, again.entries[0].Key, "the same file gives the same keys")
}

const mt940Split = `{1:F01BANKDEFFXXXX0000000000}{2:O9401200260303BANKDEFFXXXX00000000002603031200N}{4:
:20:STMT-7
:25:DE89370400440532013000
:28C:7/1
:60F:C260302EUR10,00
:61:2603030303C100,00NTRFpo_1ABC//BANKREF-1
STRIPE PAYOUT
:86:STRIPE PAYMENTS UK LTD po_1ABC
:62M:C260303EUR110,00
-}
{1:F01BANKDEFFXXXX0000000000}{2:O9401200260303BANKDEFFXXXX00000000002603031200N}{4:
:20:STMT-7
:25:DE89370400440532013000
:28C:7/2
:60M:C260303EUR110,00
:61:2603030303D30,5NMSCNONREF
:86:BANK FEE
:61:2603030303RC100,00NRTINONREF//BANKREF-3
:86:RETURN po_1ABC
:62F:C260303EUR-20,50
-}
`

func TestMT940(t *testing.T) {
	good := strings.Replace(mt940Split, "C260303EUR-20,50", "D260303EUR20,50", 1)
	c, err := parseString(t, good)
	require.NoError(t, err)
	assert.Equal(t, bankfile.MT940, c.format)
	require.Len(t, c.statements, 2, "a statement split over two messages")
	assert.Equal(t, int64(7), c.statements[1].Seq)
	assert.Equal(t, int64(2), c.statements[1].Page)
	require.Len(t, c.entries, 3)
	e := c.entries[0]
	assert.Equal(t, "ref:BANKREF-1|2026-03-03|10000", e.Key)
	assert.Equal(t, int64(10000), e.Amount)
	assert.Equal(t, "po_1ABC STRIPE PAYOUT STRIPE PAYMENTS UK LTD po_1ABC", e.Text)
	assert.Equal(t, "2026-03-03", e.BookedOn.Format("2006-01-02"))
	assert.Equal(t, int64(-3050), c.entries[1].Amount)
	assert.True(t, strings.HasPrefix(c.entries[1].Key, "cols:"))
	assert.True(t, c.entries[2].Reversal)
	assert.Equal(t, int64(-10000), c.entries[2].Amount)
}

func TestMT940Refusals(t *testing.T) {
	good := strings.Replace(mt940Split, "C260303EUR-20,50", "D260303EUR20,50", 1)
	for _, tc := range []struct{ name, doc, pos, field, words string }{
		{"sums disagree", strings.Replace(good, "D260303EUR20,50", "D260303EUR20,00", 1), "line 20", ":62F:", "the closing balance says -20.00"},
		{"no closing balance", strings.Replace(good, ":62F:D260303EUR20,50\n", "", 1), "line 20", ":62F:", "without a closing balance"},
		{"last page missing", good[:strings.Index(good, "{1:F01BANKDEFFXXXX0000000000}{2:O9401200260303BANKDEFFXXXX00000000002603031200N}{4:\n:20:STMT-7\n:25:DE89370400440532013000\n:28C:7/2")],
			"line 10", ":62F:", "its last page is missing"},
		{"page does not continue", strings.Replace(good, ":60M:C260303EUR110,00", ":60M:C260303EUR111,00", 1), "line 15", ":60M:", "opens at 111.00, the page before closed at 110.00"},
		{"more decimals than the currency", strings.Replace(good, "D30,5N", "D30,501N", 1), "line 16", ":61: amount", "3 decimal places"},
		{"unknown currency", strings.Replace(good, "C260302EUR10,00", "C260302XXY10,00", 1), "line 5", ":60F:", "unknown currency"},
		{"closing in another currency", strings.Replace(good, "C260303EUR110,00\n-}", "C260303USD110,00\n-}", 1), "line 9", ":62M: currency", "closing in USD"},
		{"a bad mark", strings.Replace(good, "0303D30,5N", "0303X30,5N", 1), "line 16", ":61: mark", "is not C, D, RC or RD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseString(t, tc.doc)
			refused(t, err, tc.pos, tc.field, tc.words)
		})
	}
}

const bai2File = `01,BANKID,CUSTID,260303,0800,42,80,1,2/
02,CUSTID,BANKID,1,260303,2400,USD,2/
03,0975312468,USD,010,100000,,,015,+149500,,/
16,165,50000,0,BANKREF1,CUSTREF1,STRIPE PAYOUT po_1ABC/
16,475,500,0,BANKREF2,,SERVICE CHARGE/
88,CONTINUED TEXT
49,300000,5/
98,300000,1,7/
99,300000,1,9/
`

func TestBAI2(t *testing.T) {
	c, err := parseString(t, bai2File)
	require.NoError(t, err)
	assert.Equal(t, bankfile.BAI2, c.format)
	require.Len(t, c.statements, 1)
	st := c.statements[0]
	assert.Equal(t, "0975312468", st.Account)
	assert.Equal(t, int64(100000), st.Opening.Amount)
	assert.Equal(t, int64(149500), st.Closing.Amount)
	require.Len(t, c.entries, 2)
	assert.Equal(t, "ref:BANKREF1", c.entries[0].Key)
	assert.Equal(t, int64(50000), c.entries[0].Amount)
	assert.Equal(t, "CUSTREF1 STRIPE PAYOUT po_1ABC", c.entries[0].Text)
	assert.Equal(t, int64(-500), c.entries[1].Amount)
	assert.Equal(t, "SERVICE CHARGE,CONTINUED TEXT", c.entries[1].Text)
}

func TestBAI2ImpliedDecimals(t *testing.T) {
	jpy := strings.NewReplacer("USD", "JPY").Replace(bai2File)
	c, err := parseString(t, jpy)
	require.NoError(t, err)
	assert.Equal(t, money.Currency("JPY"), c.entries[0].Currency)
	assert.Equal(t, int64(50000), c.entries[0].Amount, "JPY has no decimals: 50000 is ¥50,000")
}

func TestBAI2Refusals(t *testing.T) {
	for _, tc := range []struct{ name, doc, pos, field, words string }{
		{"account total", strings.Replace(bai2File, "49,300000,5/", "49,300001,5/", 1), "line 7", "49 total", "says 300001, the account's 03 and 16 amounts sum to 300000"},
		{"account count", strings.Replace(bai2File, "49,300000,5/", "49,300000,4/", 1), "line 7", "49 records", "says 4, the account has 5"},
		{"group total", strings.Replace(bai2File, "98,300000,1,7/", "98,300100,1,7/", 1), "line 8", "98 total", "says 300100"},
		{"group accounts", strings.Replace(bai2File, "98,300000,1,7/", "98,300000,2,7/", 1), "line 8", "98 accounts", "says 2, the group has 1"},
		{"group records", strings.Replace(bai2File, "98,300000,1,7/", "98,300000,1,8/", 1), "line 8", "98 records", "says 8, the group has 7"},
		{"file total", strings.Replace(bai2File, "99,300000,1,9/", "99,1,1,9/", 1), "line 9", "99 total", "says 1"},
		{"file records", strings.Replace(bai2File, "99,300000,1,9/", "99,300000,1,8/", 1), "line 9", "99 records", "says 8, the file has 9"},
		{"no trailer", strings.Replace(bai2File, "99,300000,1,9/\n", "", 1), "line 8", "99", "without its 99 file trailer"},
		{"unknown type", strings.Replace(bai2File, "16,475,", "16,999,", 1), "line 5", "16 type code", "999 is not a credit"},
		{"signed detail", strings.Replace(bai2File, "16,165,50000", "16,165,+50000", 1), "line 4", "16 amount", "is signed"},
		{"bad funds type", strings.Replace(bai2File, "16,165,50000,0", "16,165,50000,Q", 1), "line 4", "16 funds type", `"Q" is not a funds type`},
		{"version 3", strings.Replace(bai2File, "80,1,2/", "80,1,3/", 1), "line 1", "01 version", "only BAI version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseString(t, tc.doc)
			refused(t, err, tc.pos, tc.field, tc.words)
		})
	}
}

func TestCSV(t *testing.T) {
	c, err := parseString(t, "date,amount,currency,reference,description\n2026-03-03,100.00,EUR,B-1,STRIPE po_1ABC\n2026-03-03,-1.5,EUR,B-2,\n2026-03-04,1000,JPY,B-3,\n")
	require.NoError(t, err)
	assert.Equal(t, bankfile.CSV, c.format)
	require.Len(t, c.entries, 3)
	assert.Equal(t, int64(10000), c.entries[0].Amount)
	assert.Equal(t, int64(-150), c.entries[1].Amount)
	assert.Equal(t, int64(1000), c.entries[2].Amount)
	assert.Equal(t, "ref:B-3", c.entries[2].Key)

	for _, tc := range []struct{ name, doc, pos, field, words string }{
		{"decimals", "date,amount,currency,reference\n2026-03-03,1.5,JPY,B-1\n", "line 2", "amount", "1 decimal places, JPY has 0"},
		{"date", "date,amount,currency,reference\n03/03/2026,1,EUR,B-1\n", "line 2", "date", "not a date"},
		{"no reference", "date,amount,currency,reference\n2026-03-03,1,EUR,\n", "line 2", "reference", "empty"},
		{"duplicate reference", "date,amount,currency,reference\n2026-03-03,1,EUR,B\n2026-03-03,2,EUR,B\n", "line 3", "reference", "line 2 too"},
		{"missing column", "date,amount,reference\n2026-03-03,1,B\n", "line 1", "currency", "missing from the header"},
		{"unknown column", "date,amount,currency,reference,balance\n", "line 1", `"balance"`, "not a column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseString(t, tc.doc)
			refused(t, err, tc.pos, tc.field, tc.words)
		})
	}
}

func TestDetectRefusesOtherFiles(t *testing.T) {
	_, err := parseString(t, "hello")
	require.ErrorIs(t, err, bankfile.ErrMalformed)
	_, err = parseString(t, `<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.03"/>`)
	require.True(t, errors.Is(err, bankfile.ErrMalformed))
}

// TestCamtEmptyStatementKeepsItsNumber: a day without entries is still a
// statement in the sequence (found by the store-level property test: an
// empty statement read without its ElctrncSeqNb left a statement_gap open).
func TestCamtEmptyStatementKeepsItsNumber(t *testing.T) {
	c, err := parseString(t, camt("camt.053", 2, 9, "10.00", "10.00", ""))
	require.NoError(t, err)
	require.Len(t, c.statements, 1)
	assert.Equal(t, int64(9), c.statements[0].Seq)
}

// A transaction's clearing system reference (where a bank puts an ACH
// trace number) joins the entry's text, and leaves its key as it was.
func TestCamtClearingReferenceJoinsTheText(t *testing.T) {
	e := camtEntry{amt: "1.00", ind: "CRDT", sts: "BOOK", booked: "2026-03-03", text: "STRIPE"}
	plain := camt("camt.053", 8, 1, "0.00", "1.00", "", e)
	withRef := strings.Replace(plain, "<TxDtls>", "<TxDtls><Refs><ClrSysRef>091000019990002</ClrSysRef></Refs>", 1)
	require.NotEqual(t, plain, withRef)
	a, err := parseString(t, plain)
	require.NoError(t, err)
	b, err := parseString(t, withRef)
	require.NoError(t, err)
	assert.Equal(t, "STRIPE 091000019990002", b.entries[0].Text)
	assert.Equal(t, a.entries[0].Key, b.entries[0].Key, "the key is the line's identity as before")
}
