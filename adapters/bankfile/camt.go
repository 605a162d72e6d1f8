package bankfile

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

// camtNamespace is the namespace prefix of the camt messages read; the
// version follows: .001.02 to .001.13.
const camtNamespace = "urn:iso:std:iso:20022:tech:xsd:"

// camtVersion returns the message (camt.053 or camt.054) of a namespace it
// reads, or an error naming it.
func camtVersion(ns string) (Format, error) {
	rest, ok := strings.CutPrefix(ns, camtNamespace)
	if !ok {
		return "", fmt.Errorf("namespace %q is not an ISO 20022 message", ns)
	}
	msg, ver, ok := strings.Cut(rest, ".001.")
	if !ok || (msg != "camt.053" && msg != "camt.054") {
		return "", fmt.Errorf("namespace %q is not camt.053 or camt.054", ns)
	}
	n, err := strconv.Atoi(ver)
	if err != nil || len(ver) != 2 || n < 2 || n > 13 {
		return "", fmt.Errorf("namespace %q: version %q is not one of .001.02 to .001.13", ns, ver)
	}
	return Format(msg), nil
}

type camtAmt struct {
	Value string `xml:",chardata"`
	Ccy   string `xml:"Ccy,attr"`
}

type camtDate struct {
	Dt   string `xml:"Dt"`
	DtTm string `xml:"DtTm"`
}

type camtBal struct {
	Tp struct {
		CdOrPrtry struct {
			Cd    string `xml:"Cd"`
			Prtry string `xml:"Prtry"`
		} `xml:"CdOrPrtry"`
	} `xml:"Tp"`
	Amt       camtAmt  `xml:"Amt"`
	CdtDbtInd string   `xml:"CdtDbtInd"`
	Dt        camtDate `xml:"Dt"`
}

type camtNumSum struct {
	NbOfNtries string `xml:"NbOfNtries"`
	Sum        string `xml:"Sum"`
}

type camtSummary struct {
	TtlNtries struct {
		camtNumSum
		TtlNetNtry struct { // .001.03 and later
			Amt       string `xml:"Amt"`
			CdtDbtInd string `xml:"CdtDbtInd"`
		} `xml:"TtlNetNtry"`
		TtlNetNtryAmt string `xml:"TtlNetNtryAmt"` // .001.02
		CdtDbtInd     string `xml:"CdtDbtInd"`     // .001.02
	} `xml:"TtlNtries"`
	TtlCdtNtries camtNumSum `xml:"TtlCdtNtries"`
	TtlDbtNtries camtNumSum `xml:"TtlDbtNtries"`
}

// camtSts is an entry's status: text up to .001.07, <Cd> from .001.08.
type camtSts struct {
	Text  string `xml:",chardata"`
	Cd    string `xml:"Cd"`
	Prtry string `xml:"Prtry"`
}

func (s camtSts) code() string {
	if c := strings.TrimSpace(s.Cd); c != "" {
		return c
	}
	if c := strings.TrimSpace(s.Prtry); c != "" {
		return c
	}
	return strings.TrimSpace(s.Text)
}

type camtNtry struct {
	NtryRef     string   `xml:"NtryRef"`
	Amt         camtAmt  `xml:"Amt"`
	CdtDbtInd   string   `xml:"CdtDbtInd"`
	RvslInd     string   `xml:"RvslInd"`
	Sts         camtSts  `xml:"Sts"`
	BookgDt     camtDate `xml:"BookgDt"`
	ValDt       camtDate `xml:"ValDt"`
	AcctSvcrRef string   `xml:"AcctSvcrRef"`
	BkTxCd      struct {
		Domn struct {
			Cd   string `xml:"Cd"`
			Fmly struct {
				Cd        string `xml:"Cd"`
				SubFmlyCd string `xml:"SubFmlyCd"`
			} `xml:"Fmly"`
		} `xml:"Domn"`
		Prtry struct {
			Cd string `xml:"Cd"`
		} `xml:"Prtry"`
	} `xml:"BkTxCd"`
	NtryDtls []struct {
		TxDtls []struct {
			Refs struct {
				EndToEndId string `xml:"EndToEndId"`
				// ClrSysRef: "reference assigned by a clearing
				// system" (ISO 20022), where a bank puts an ACH
				// trace number, and so a payout's trace id.
				ClrSysRef string `xml:"ClrSysRef"`
			} `xml:"Refs"`
			RmtInf struct {
				Ustrd []string `xml:"Ustrd"`
				Strd  []struct {
					CdtrRefInf struct {
						Ref string `xml:"Ref"`
					} `xml:"CdtrRefInf"`
				} `xml:"Strd"`
			} `xml:"RmtInf"`
			AddtlTxInf string `xml:"AddtlTxInf"`
		} `xml:"TxDtls"`
	} `xml:"NtryDtls"`
	AddtlNtryInf string `xml:"AddtlNtryInf"`
}

type camtAcct struct {
	ID struct {
		IBAN string `xml:"IBAN"`
		Othr struct {
			ID string `xml:"Id"`
		} `xml:"Othr"`
	} `xml:"Id"`
	Ccy string `xml:"Ccy"`
}

// camtReader walks a camt document element by element: the statements'
// small parts are decoded whole, entries one at a time.
type camtReader struct {
	d      *xml.Decoder
	sink   Sink
	ns     string
	format Format
	stmts  int
}

func parseCamt(r io.Reader, sink Sink) error {
	d := xml.NewDecoder(r)
	d.Strict = true
	// No Entity map: only XML's five predefined entities exist; no
	// CharsetReader: a declared encoding other than UTF-8 is an error.
	c := &camtReader{d: d, sink: sink}
	return c.document()
}

func (c *camtReader) token(path string) (xml.Token, error) {
	tok, err := c.d.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, perr(path, "", "the document ends early")
		}
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return nil, perr(fmt.Sprintf("line %d", se.Line), "", "malformed XML: %s", se.Msg)
		}
		return nil, err
	}
	if dir, ok := tok.(xml.Directive); ok {
		return nil, perr(path, "", "a DTD or directive (<!%.20s…>) is refused: camt documents have none", string(dir))
	}
	return tok, nil
}

func (c *camtReader) document() error {
	for {
		tok, err := c.token("/")
		if err != nil {
			return err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local != "Document" {
			return perr("/"+se.Name.Local, "", "the root element is %q, not Document", se.Name.Local)
		}
		f, err := camtVersion(se.Name.Space)
		if err != nil {
			return perr("/Document", "xmlns", "%v", err)
		}
		c.ns, c.format = se.Name.Space, f
		if err := c.message(); err != nil {
			return err
		}
		return c.trailing()
	}
}

// trailing refuses anything but whitespace and comments after the root.
func (c *camtReader) trailing() error {
	for {
		tok, err := c.d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return perr("/", "", "after the document: %v", err)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if strings.TrimSpace(string(t)) != "" {
				return perr("/", "", "text after the document")
			}
		case xml.Comment, xml.ProcInst:
		default:
			return perr("/", "", "content after the document")
		}
	}
}

func (c *camtReader) message() error {
	want, item := "BkToCstmrStmt", "Stmt"
	if c.format == Camt054 {
		want, item = "BkToCstmrDbtCdtNtfctn", "Ntfctn"
	}
	path := "/Document/" + want
	seen := false
	for {
		tok, err := c.token("/Document")
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			if !seen {
				return perr("/Document", want, "missing")
			}
			if c.stmts == 0 {
				return perr(path, item, "no %s in the message", item)
			}
			return nil
		case xml.StartElement:
			if err := c.inNS(t, "/Document"); err != nil {
				return err
			}
			if t.Name.Local != want || seen {
				return perr("/Document/"+t.Name.Local, "", "unexpected element in a %s document", c.format)
			}
			seen = true
			if err := c.body(path, item); err != nil {
				return err
			}
		}
	}
}

func (c *camtReader) inNS(t xml.StartElement, parent string) error {
	if t.Name.Space != c.ns {
		return perr(parent+"/"+t.Name.Local, "xmlns", "element in namespace %q inside a %q document", t.Name.Space, c.ns)
	}
	return nil
}

func (c *camtReader) body(path, item string) error {
	for {
		tok, err := c.token(path)
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			if err := c.inNS(t, path); err != nil {
				return err
			}
			if t.Name.Local != item {
				if err := c.d.Skip(); err != nil {
					return perr(path+"/"+t.Name.Local, "", "malformed XML: %v", err)
				}
				continue
			}
			c.stmts++
			if err := c.statement(fmt.Sprintf("%s/%s[%d]", path, item, c.stmts)); err != nil {
				return err
			}
		}
	}
}

// camtStmt is a statement being read.
type camtStmt struct {
	st              Statement
	path            string
	begun           bool
	summary         *camtSummary
	summaryPath     string
	count           int
	credits, debits struct {
		n   int
		sum int64
	}
	gross int64 // sum of every entry's amount, unsigned
	// elSeq, lglSeq: the statement's numbers as written.
	elSeq, lglSeq string
	net           int64 // every entry, signed
	occ           occurrences
}

func (c *camtReader) statement(path string) error {
	s := &camtStmt{path: path, occ: occurrences{}}
	s.st.Format, s.st.Pos = c.format, path
	elSeq, lglSeq := &s.elSeq, &s.lglSeq
	bals, ntries := 0, 0
	for {
		tok, err := c.token(path)
		if err != nil {
			return err
		}
		var t xml.StartElement
		switch tt := tok.(type) {
		case xml.EndElement:
			return c.endStatement(s)
		case xml.StartElement:
			t = tt
		default:
			continue
		}
		if err := c.inNS(t, path); err != nil {
			return err
		}
		el := path + "/" + t.Name.Local
		decode := func(v any) error {
			if err := c.d.DecodeElement(v, &t); err != nil {
				return perr(el, "", "malformed XML: %v", err)
			}
			return nil
		}
		switch t.Name.Local {
		case "Id":
			if err := decode(&s.st.ID); err != nil {
				return err
			}
		case "ElctrncSeqNb":
			if err := decode(elSeq); err != nil {
				return err
			}
		case "LglSeqNb":
			if err := decode(lglSeq); err != nil {
				return err
			}
		case "Acct":
			var a camtAcct
			if err := decode(&a); err != nil {
				return err
			}
			s.st.Account = strings.TrimSpace(a.ID.IBAN)
			if s.st.Account == "" {
				s.st.Account = strings.TrimSpace(a.ID.Othr.ID)
			}
			if a.Ccy != "" {
				cur, err := currencyOf(a.Ccy)
				if err != nil {
					return perr(el, "Ccy", "%v", err)
				}
				s.st.Currency = cur
			}
		case "Bal":
			bals++
			var b camtBal
			if err := decode(&b); err != nil {
				return err
			}
			if err := s.balance(b, fmt.Sprintf("%s/Bal[%d]", path, bals)); err != nil {
				return err
			}
		case "TxsSummry":
			var sum camtSummary
			if err := decode(&sum); err != nil {
				return err
			}
			s.summary, s.summaryPath = &sum, el
		case "Ntry":
			ntries++
			var n camtNtry
			if err := decode(&n); err != nil {
				return err
			}
			if err := c.ensureBegun(s); err != nil {
				return err
			}
			if err := c.entry(s, n, fmt.Sprintf("%s/Ntry[%d]", path, ntries)); err != nil {
				return err
			}
		default:
			if err := c.d.Skip(); err != nil {
				return perr(el, "", "malformed XML: %v", err)
			}
		}
	}
}

func (c *camtReader) ensureBegun(s *camtStmt) error {
	if s.begun {
		return nil
	}
	s.begun = true
	for _, q := range []struct{ name, v string }{{"ElctrncSeqNb", s.elSeq}, {"LglSeqNb", s.lglSeq}} {
		v := strings.TrimSpace(q.v)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return perr(s.path+"/"+q.name, q.name, "%q is not a sequence number", v)
		}
		if s.st.Seq == 0 {
			s.st.Seq = n
		}
	}
	return c.sink.begin(&s.st)
}

// balance keeps the opening (OPBD, else PRCD) and closing (CLBD) booked
// balances; others (available, interim) are not what the entries sum to.
func (s *camtStmt) balance(b camtBal, path string) error {
	code := strings.TrimSpace(b.Tp.CdOrPrtry.Cd)
	if code != "OPBD" && code != "PRCD" && code != "CLBD" {
		return nil
	}
	cur, err := currencyOf(b.Amt.Ccy)
	if err != nil {
		return perr(path+"/Amt", "Ccy", "%v", err)
	}
	if s.st.Currency == "" {
		s.st.Currency = cur
	} else if cur != s.st.Currency {
		return perr(path+"/Amt", "Ccy", "balance in %s, the account is in %s", cur, s.st.Currency)
	}
	v, err := amountMajor(strings.TrimSpace(b.Amt.Value), cur)
	if err != nil {
		return perr(path+"/Amt", "Amt", "%v", err)
	}
	switch strings.TrimSpace(b.CdtDbtInd) {
	case "CRDT":
	case "DBIT":
		v = -v
	default:
		return perr(path+"/CdtDbtInd", "CdtDbtInd", "%q is neither CRDT nor DBIT", b.CdtDbtInd)
	}
	d, err := camtDay(b.Dt)
	if err != nil {
		return perr(path+"/Dt", "Dt", "%v", err)
	}
	bal := &Balance{Amount: v, Date: d, Code: code}
	switch {
	case code == "CLBD":
		if s.st.Closing != nil {
			return perr(path, "Tp", "a second CLBD balance")
		}
		s.st.Closing = bal
	case s.st.Opening == nil || (code == "OPBD" && s.st.Opening.Code == "PRCD"):
		s.st.Opening = bal
	case s.st.Opening.Code == code:
		return perr(path, "Tp", "a second %s balance", code)
	}
	return nil
}

func camtDay(d camtDate) (time.Time, error) {
	if v := strings.TrimSpace(d.Dt); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", v)
		}
		return t, nil
	}
	if v := strings.TrimSpace(d.DtTm); v != "" {
		// The bank's own calendar day: the date as written, whatever
		// the offset (an ISODateTime may also carry none).
		if len(v) < 10 {
			return time.Time{}, fmt.Errorf("%q is not a date-time", v)
		}
		t, err := time.Parse(time.DateOnly, v[:10])
		if err != nil || (len(v) > 10 && v[10] != 'T') {
			return time.Time{}, fmt.Errorf("%q is not a date-time", v)
		}
		return t, nil
	}
	return time.Time{}, nil
}

func (c *camtReader) entry(s *camtStmt, n camtNtry, path string) error {
	cur, err := currencyOf(n.Amt.Ccy)
	if err != nil {
		return perr(path+"/Amt", "Ccy", "%v", err)
	}
	if s.st.Currency != "" && cur != s.st.Currency {
		return perr(path+"/Amt", "Ccy", "an entry in %s; the statement declares %s", cur, s.st.Currency)
	}
	v, err := amountMajor(strings.TrimSpace(n.Amt.Value), cur)
	if err != nil {
		return perr(path+"/Amt", "Amt", "%v", err)
	}
	gross, err := add(s.gross, v)
	if err != nil {
		return perr(path+"/Amt", "Amt", "%v", err)
	}
	s.gross = gross
	switch strings.TrimSpace(n.CdtDbtInd) {
	case "CRDT":
		s.credits.n++
		s.credits.sum += v // bounded: below gross, checked above
	case "DBIT":
		s.debits.n++
		s.debits.sum += v
		v = -v
	default:
		return perr(path+"/CdtDbtInd", "CdtDbtInd", "%q is neither CRDT nor DBIT", n.CdtDbtInd)
	}
	s.net += v
	s.count++
	e := Entry{Pos: path, Amount: v, Currency: cur, Ref: strings.TrimSpace(n.AcctSvcrRef)}
	switch rv := strings.TrimSpace(n.RvslInd); rv {
	case "", "false", "0":
	case "true", "1":
		e.Reversal = true
	default:
		return perr(path+"/RvslInd", "RvslInd", "%q is not a boolean", rv)
	}
	switch sts := n.Sts.code(); sts {
	case "BOOK":
		e.Booked = true
	case "PDNG", "INFO", "FUTR":
	case "":
		return perr(path+"/Sts", "Sts", "missing")
	default:
		return perr(path+"/Sts", "Sts", "%q is not an entry status (BOOK, PDNG, INFO, FUTR)", sts)
	}
	if e.BookedOn, err = camtDay(n.BookgDt); err != nil {
		return perr(path+"/BookgDt", "BookgDt", "%v", err)
	}
	if e.ValueOn, err = camtDay(n.ValDt); err != nil {
		return perr(path+"/ValDt", "ValDt", "%v", err)
	}
	if e.Booked && e.BookedOn.IsZero() {
		return perr(path+"/BookgDt", "BookgDt", "a booked entry without its booking date")
	}
	e.Code = n.BkTxCd.Prtry.Cd
	if d := n.BkTxCd.Domn; d.Cd != "" {
		e.Code = d.Cd + "/" + d.Fmly.Cd + "/" + d.Fmly.SubFmlyCd
	}
	e.Text = camtText(n)
	if e.Booked {
		b, err := add(s.st.Booked, e.Amount)
		if err != nil {
			return perr(path+"/Amt", "Amt", "%v", err)
		}
		s.st.Booked = b
	}
	if e.Ref != "" {
		e.Key = "ref:" + e.Ref
	} else {
		e.Key = s.occ.key(date(e.BookedOn), date(e.ValueOn), strconv.FormatInt(e.Amount, 10), string(cur),
			strconv.FormatBool(e.Reversal), e.Code, e.Text)
	}
	// The clearing system's references join the text after the key is
	// made: a line's identity stays what it was before they were read
	// (a file imported before is still the same lines), and they name a
	// payout by its trace id (domain/bankstatement).
	if refs := camtClearing(n); refs != "" {
		e.Text = strings.TrimSpace(e.Text + " " + refs)
	}
	s.st.Entries++
	return c.sink.entry(&s.st, e)
}

// camtText joins what an entry says about itself, where providers put their
// references: AddtlNtryInf, each transaction's EndToEndId, unstructured
// and structured remittance, AddtlTxInf.
func camtText(n camtNtry) string {
	var parts []string
	push := func(s string) {
		if s = strings.TrimSpace(s); s != "" && s != "NOTPROVIDED" {
			parts = append(parts, s)
		}
	}
	push(n.AddtlNtryInf)
	for _, d := range n.NtryDtls {
		for _, tx := range d.TxDtls {
			push(tx.Refs.EndToEndId)
			for _, u := range tx.RmtInf.Ustrd {
				push(u)
			}
			for _, s := range tx.RmtInf.Strd {
				push(s.CdtrRefInf.Ref)
			}
			push(tx.AddtlTxInf)
		}
	}
	return strings.Join(parts, " ")
}

// camtClearing joins an entry's transactions' clearing system references.
func camtClearing(n camtNtry) string {
	var parts []string
	for _, d := range n.NtryDtls {
		for _, tx := range d.TxDtls {
			if r := strings.TrimSpace(tx.Refs.ClrSysRef); r != "" && r != "NOTPROVIDED" {
				parts = append(parts, r)
			}
		}
	}
	return strings.Join(parts, " ")
}

func (c *camtReader) endStatement(s *camtStmt) error {
	if err := c.ensureBegun(s); err != nil {
		return err
	}
	if c.format == Camt053 {
		if s.st.Opening == nil {
			return perr(s.path, "Bal", "no opening booked balance (OPBD or PRCD)")
		}
		if s.st.Closing == nil {
			return perr(s.path, "Bal", "no closing booked balance (CLBD)")
		}
		if got, err := add(s.st.Opening.Amount, s.st.Booked); err != nil || got != s.st.Closing.Amount {
			return perr(s.path, "Bal", "opening %s %s plus the booked entries %s is %s, the closing balance (CLBD) says %s",
				money.FormatMinor(s.st.Opening.Amount, s.st.Currency), s.st.Opening.Code,
				money.FormatMinor(s.st.Booked, s.st.Currency), money.FormatMinor(got, s.st.Currency),
				money.FormatMinor(s.st.Closing.Amount, s.st.Currency))
		}
	}
	if s.summary != nil {
		if err := s.checkSummary(); err != nil {
			return err
		}
	}
	return c.sink.end(&s.st)
}

// checkSummary compares TxsSummry with the entries: each element present
// must agree (counts, sums of amounts, the net).
func (s *camtStmt) checkSummary() error {
	sum := s.summary
	cur := s.st.Currency
	check := func(field string, ns camtNumSum, n int, total int64) error {
		if v := strings.TrimSpace(ns.NbOfNtries); v != "" {
			if v != strconv.Itoa(n) {
				return perr(s.summaryPath+"/"+field+"/NbOfNtries", "NbOfNtries", "says %s entries, the statement has %d", v, n)
			}
		}
		if v := strings.TrimSpace(ns.Sum); v != "" {
			got, err := amountMajor(v, cur)
			if err != nil {
				return perr(s.summaryPath+"/"+field+"/Sum", "Sum", "%v", err)
			}
			if got != total {
				return perr(s.summaryPath+"/"+field+"/Sum", "Sum", "says %s, the entries sum to %s", v, money.FormatMinor(total, cur))
			}
		}
		return nil
	}
	if err := check("TtlNtries", sum.TtlNtries.camtNumSum, s.count, s.gross); err != nil {
		return err
	}
	if err := check("TtlCdtNtries", sum.TtlCdtNtries, s.credits.n, s.credits.sum); err != nil {
		return err
	}
	if err := check("TtlDbtNtries", sum.TtlDbtNtries, s.debits.n, s.debits.sum); err != nil {
		return err
	}
	amt, ind, field := sum.TtlNtries.TtlNetNtry.Amt, sum.TtlNtries.TtlNetNtry.CdtDbtInd, "TtlNetNtry/Amt"
	if strings.TrimSpace(amt) == "" {
		amt, ind, field = sum.TtlNtries.TtlNetNtryAmt, sum.TtlNtries.CdtDbtInd, "TtlNetNtryAmt"
	}
	if strings.TrimSpace(amt) == "" {
		return nil
	}
	v, err := amountMajor(strings.TrimSpace(amt), cur)
	if err != nil {
		return perr(s.summaryPath+"/TtlNtries/"+field, field, "%v", err)
	}
	if strings.TrimSpace(ind) == "DBIT" {
		v = -v
	}
	if v != s.net {
		return perr(s.summaryPath+"/TtlNtries/"+field, field, "says a net of %s, the entries net %s",
			money.FormatMinor(v, cur), money.FormatMinor(s.net, cur))
	}
	return nil
}
