package paypal

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
)

// A file cut short lacks its file footer: it imports nothing, and the
// error names its last line. Any prefix of the sample that drops the FF is
// refused.
func TestTruncatedSTLIsRefused(t *testing.T) {
	whole := stlFixture(t)
	_, err := parseSTL(t, whole)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(whole, "\n"), "\n")
	require.True(t, strings.HasPrefix(lines[len(lines)-1], `"FF"`))
	for n := 1; n < len(lines); n++ {
		_, err := parseSTL(t, strings.Join(lines[:n], ""))
		var pe *report.ParseError
		require.ErrorAs(t, err, &pe, "%d lines", n)
		assert.Contains(t, err.Error(), "file footer", "%d lines", n)
		if strings.Contains(err.Error(), "truncated") {
			assert.Equal(t, n, pe.Line, "the last line read")
		}
	}
	_, err = parseSTL(t, "")
	assert.ErrorIs(t, err, report.ErrMalformed, "an empty file is no report")
}

// A file that disagrees with its own structure is refused, naming the line.
func TestSTLStructure(t *testing.T) {
	sh := `"SH",2026/11/30 00:00:00 -0800,2026/11/30 23:59:59 -0800,"X",""` + "\n"
	ch := `"CH","Transaction ID","Transaction Event Code","Transaction Debit or Credit","Gross Transaction Amount","Gross Transaction Currency","Transaction Completion Date"` + "\n"
	sb := `"SB","W1","T0400","DR",500,"USD",2026/11/30 23:00:00 -0800` + "\n"
	for _, c := range []struct {
		name, body string
		line       int
	}{
		{"a record after the footer", sh + ch + sb + `"SC",1` + "\n" + `"FF",1` + "\n" + sb, 6},
		{"a body row after its section", sh + ch + sb + `"SC",1` + "\n" + sb + `"FF",1` + "\n", 5},
		{"a section never closed", sh + ch + sb + sh, 4},
		{"the footer inside a section", sh + ch + sb + `"FF",1` + "\n", 4},
	} {
		_, err := parseSTL(t, c.body)
		var pe *report.ParseError
		require.ErrorAs(t, err, &pe, c.name)
		assert.Equal(t, c.line, pe.Line, "%s: %v", c.name, err)
	}
}

// A report split across files (over a million records) has FH … FF in each
// file; the report footer (RF, RC) is in the last one and spans the files.
// Each file imports on its own, checked against its own section footers and
// file footer; the last file's RF and RC, which count rows of the other
// files too, are not compared with its rows.
func TestSplitSTLImportsFileByFile(t *testing.T) {
	sh := `"SH",2026/11/30 00:00:00 -0800,2026/11/30 23:59:59 -0800,"X",""` + "\n"
	ch := `"CH","Transaction ID","Transaction Event Code","Transaction Debit or Credit","Gross Transaction Amount","Gross Transaction Currency","Transaction Completion Date","Fee Debit or Credit","Fee Amount"` + "\n"
	first := `"RH",2026/12/01 02:44:19 -0800,"A","X",009` + "\n" + `"FH",01` + "\n" + sh + ch +
		`"SB","C1","T0006","CR",900,"USD",2026/11/30 22:00:00 -0800,"DR",30` + "\n" +
		`"SB","W1","T0400","DR",500,"USD",2026/11/30 23:00:00 -0800,"",` + "\n" +
		`"SF","USD",900,500,0,30,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,2` + "\n" + `"SC",2` + "\n" + `"FF",2` + "\n"
	second := `"RH",2026/12/01 02:44:19 -0800,"A","X",009` + "\n" + `"FH",02` + "\n" + sh + ch +
		`"SB","W2","T0400","DR",700,"USD",2026/11/30 23:10:00 -0800,"",` + "\n" +
		`"SF","USD",0,700,0,0,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,1` + "\n" + `"SC",1` + "\n" +
		`"RF","USD",900,1200,0,30,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,3` + "\n" + `"RC",3` + "\n" + `"FF",1` + "\n"
	for i, c := range []struct {
		body string
		rows int
	}{{first, 2}, {second, 1}} {
		recs, err := parseSTL(t, c.body)
		require.NoError(t, err, "file %d", i+1)
		require.Len(t, recs, c.rows)
	}
	_, err := parseSTL(t, strings.TrimSuffix(second, `"FF",1`+"\n"))
	assert.ErrorIs(t, err, report.ErrMalformed, "the second file cut short")
	for _, c := range []struct {
		name, body, old, new string
		line                 int
	}{
		{"the first file's section footer", first, `"SF","USD",900,500,`, `"SF","USD",900,1200,`, 7},
		{"the first file's footer", first, `"FF",2`, `"FF",3`, 9},
		{"the second file's section footer", second, `"SF","USD",0,700,`, `"SF","USD",0,1200,`, 6},
		{"the second file's footer counting the report", second, `"FF",1`, `"FF",3`, 10},
	} {
		_, err := parseSTL(t, strings.Replace(c.body, c.old, c.new, 1))
		var pe *report.ParseError
		require.ErrorAs(t, err, &pe, c.name)
		assert.Equal(t, c.line, pe.Line, "%s: %v", c.name, err)
		assert.ErrorIs(t, err, ErrFooterMismatch, c.name)
	}
	// The same rows in one file: RF and RC are then compared.
	one := strings.Replace(first, `"FF",2`, `"RF","USD",900,500,0,30,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,2`+"\n"+`"RC",2`+"\n"+`"FF",2`, 1)
	_, err = parseSTL(t, one)
	require.NoError(t, err)
	_, err = parseSTL(t, strings.Replace(one, `"RC",2`, `"RC",3`, 1))
	assert.ErrorIs(t, err, ErrFooterMismatch, "a whole report's RC")
}

// A section whose count (SC) disagrees with its SB rows (a row lost or
// added in transit) imports nothing; the error names the SC line. The
// sample's own count agrees with its rows.
func TestSTLSectionCountMustMatchItsRows(t *testing.T) {
	whole := stlFixture(t)
	recs, err := parseSTL(t, whole)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(whole, "\n"), "\n")
	scLine := 0
	for i, l := range lines {
		if strings.HasPrefix(l, `"SC",`) {
			scLine = i + 1
		}
	}
	require.Equal(t, fmt.Sprintf("\"SC\",%d\n", len(recs)), lines[scLine-1], "the sample's SC counts its SB rows")
	var dropped []string
	for _, l := range lines {
		if strings.HasPrefix(l, `"SB","1Y107995YT783435V"`) {
			continue // one SB row lost
		}
		dropped = append(dropped, l)
	}
	_, err = parseSTL(t, strings.Join(dropped, ""))
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, scLine-1, pe.Line, "the SC line of the shortened file: %v", err)
	assert.Contains(t, err.Error(), "section count")
	for _, bad := range []string{`"SC",9`, `"SC",`, `"SC",x`} {
		_, err := parseSTL(t, strings.Replace(whole, fmt.Sprintf(`"SC",%d`, len(recs)), bad, 1))
		require.ErrorAs(t, err, &pe, bad)
		assert.Equal(t, scLine, pe.Line, bad)
	}
}

// footerCase alters the sample (old → new, first occurrence) and expects
// the parse refused at line with both figures in the message, or accepted
// (line 0).
type footerCase struct {
	name, old, new string
	line           int
	figures        []string
}

func checkFooterCases(t *testing.T, whole string, cases []footerCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, whole, c.old)
			_, err := parseSTL(t, strings.Replace(whole, c.old, c.new, 1))
			if c.line == 0 {
				require.NoError(t, err)
				return
			}
			var pe *report.ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.line, pe.Line, err.Error())
			assert.ErrorIs(t, err, ErrFooterMismatch)
			assert.ErrorIs(t, err, report.ErrMalformed)
			for _, f := range c.figures {
				assert.Contains(t, err.Error(), f)
			}
		})
	}
}

// Each section's footer (SF) gives per currency the totals of its SB rows:
// gross credits, gross debits, and the fee credits and debits (in either
// order: the published samples disagree on it). A file whose rows do not
// add up to them (an amount changed in transit, a row lost with its count
// mended) imports nothing; the error names the SF line and both figures.
func TestSTLSectionFooterTotalsMustMatchTheRows(t *testing.T) {
	whole := stlFixture(t)
	_, err := parseSTL(t, whole)
	require.NoError(t, err, "the sample adds up")
	usdSF, eurSF := 12, 13
	checkFooterCases(t, whole, []footerCase{
		{"gross credits", `"SF","USD",6207,`, `"SF","USD",6208,`, usdSF, []string{"gross credits 6208", "have 6207"}},
		{"gross debits", `"SF","EUR",5000,4795,`, `"SF","EUR",5000,4794,`, eurSF, []string{"gross debits 4794", "have 4795"}},
		{"fee totals", `"SF","USD",6207,4148,20,2079,`, `"SF","USD",6207,4148,20,2000,`, usdSF,
			[]string{"20 and 2000", "fee credits 20 and fee debits 2079"}},
		{"an SB amount changed", `"CR",1000,"USD","DR",79`, `"CR",1001,"USD","DR",79`, usdSF, []string{"6207", "6208"}},
		{"an SB fee changed", `"CR",5000,"EUR","DR",205`, `"CR",5000,"EUR","DR",206`, eurSF, []string{"205", "206"}},
		{"a direction flipped", `"DR",3148,"USD"`, `"CR",3148,"USD"`, usdSF, []string{"6207", "9355"}},
		{"a currency without rows", `"SC",7`, `"SF","GBP",1,0,0,0` + "\n" + `"SC",7`, 14, []string{"GBP", "gross credits 1", "have 0"}},
		{"fee totals in the other order", `"SF","USD",6207,4148,20,2079,`, `"SF","USD",6207,4148,2079,20,`, 0, nil},
	})

	// A row lost in transit with its section count mended: SC agrees, the
	// totals do not.
	var lost []string
	for _, l := range strings.SplitAfter(whole, "\n") {
		if strings.HasPrefix(l, `"SB","3WD54321EF9876543"`) {
			continue
		}
		lost = append(lost, strings.Replace(strings.Replace(l, `"SC",7`, `"SC",6`, 1), `"FF",7`, `"FF",6`, 1))
	}
	_, err = parseSTL(t, strings.Join(lost, ""))
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, usdSF-1, pe.Line, err.Error())
	assert.Contains(t, err.Error(), "gross debits 4148")
	assert.Contains(t, err.Error(), "have 1000")
}

// A footer whose totals are not unsigned whole numbers, or whose currency is
// no currency, is refused naming its line.
func TestSTLMalformedFooter(t *testing.T) {
	whole := stlFixture(t)
	for _, bad := range []string{`"SF","USD",62.07,`, `"SF","USD",-6207,`, `"SF","USD",x,`, `"SF","US",6207,`} {
		_, err := parseSTL(t, strings.Replace(whole, `"SF","USD",6207,`, bad, 1))
		var pe *report.ParseError
		require.ErrorAs(t, err, &pe, bad)
		assert.Equal(t, 12, pe.Line, "%s: %v", bad, err)
	}
	_, err := parseSTL(t, strings.Replace(whole, `"SC",7`, `"SC",7`+"\n"+`"SF","USD",0,0,0,0`, 1))
	assert.ErrorContains(t, err, "outside a section")
}

// The file footer (FF) counts the file's SB rows; a file that holds the
// whole report (file sequence 01 with the report footer) has its report
// footer (RF, per currency, as SF over every section) and count (RC)
// compared with its rows too.
func TestSTLFileAndReportFooters(t *testing.T) {
	whole := stlFixture(t)
	checkFooterCases(t, whole, []footerCase{
		{"file footer", `"FF",7`, `"FF",6`, 18, []string{`"6"`, "7 SB rows"}},
		{"file footer not a number", `"FF",7`, `"FF",`, 18, []string{"7 SB rows"}},
		{"report count", `"RC",7`, `"RC",8`, 17, []string{`"8"`, "7 SB rows"}},
		{"report footer gross", `"RF","EUR",5000,`, `"RF","EUR",5100,`, 16, []string{"5100", "have 5000"}},
		{"report footer fees", `"RF","USD",6207,4148,20,2079,`, `"RF","USD",6207,4148,21,2079,`, 15, []string{"21 and 2079"}},
	})

	// Two sections: RF sums both, each SF its own.
	i := strings.Index(whole, `"SH",`)
	j := strings.Index(whole, `"RF",`)
	twice := whole[:i] + whole[i:j] + whole[i:j] + whole[j:]
	twice = strings.Replace(twice, `"RF","USD",6207,4148,20,2079,`, `"RF","USD",12414,8296,40,4158,`, 1)
	twice = strings.Replace(twice, `"RF","EUR",5000,4795,0,205,`, `"RF","EUR",10000,9590,0,410,`, 1)
	twice = strings.Replace(strings.Replace(twice, `"RC",7`, `"RC",14`, 1), `"FF",7`, `"FF",14`, 1)
	recs, err := parseSTL(t, twice)
	require.NoError(t, err, "two sections, the report footer over both")
	require.Len(t, recs, 14)
	_, err = parseSTL(t, strings.Replace(twice, `"RF","EUR",10000,`, `"RF","EUR",5000,`, 1))
	assert.ErrorIs(t, err, ErrFooterMismatch, "RF is the whole report's, not the last section's")
}

// Files written through a spreadsheet pad every row to the CH width with
// empty cells, drop the quotes, and write the file sequence as "1" (as the
// published samples of docs/settlement.md do): the footers read the same.
func TestSTLPaddedFooters(t *testing.T) {
	pad := ",,,,,,,,,,,,,,,,"
	in := "RH,2026/12/01 02:44:19 -0800,A,X,9" + pad + "\n" + "FH,1" + pad + "\n" +
		"SH,2026/11/30 00:00:00 -0800,2026/11/30 23:59:59 -0800,X" + pad + "\n" +
		"CH,Transaction ID,PayPal Reference ID,PayPal Reference ID Type,Transaction Event Code,Transaction Completion Date,Transaction Debit or Credit,Gross Transaction Amount,Gross Transaction Currency,Fee Debit or Credit,Fee Amount,Fee Currency\n" +
		"SB,A1,I-X1,RP,T0002,2026/11/30 03:12:28 -0800,CR,10400,HKD,DR,556,HKD\n" +
		"SB,A2,,,T0006,2026/11/30 03:57:02 -0800,CR,1560,USD,DR,52,USD\n" +
		"SB,A3,A2,TXN,T1107,2026/11/30 04:57:02 -0800,DR,500,USD,CR,17,USD\n" +
		"SF,USD,1560,500,17,52,CR,100,CR,1125,CR,100,CR,1125,CR,0,CR,0,2" + pad + "\n" +
		"SF,HKD,10400,0,0,556,CR,0,CR,9844,CR,0,CR,9844,CR,0,CR,0,1" + pad + "\n" +
		"SC,3" + pad + "\n" +
		"RF,USD,1560,500,17,52,CR,100,CR,1125,CR,100,CR,1125,CR,0,CR,0,2" + pad + "\n" +
		"RF,HKD,10400,0,0,556,CR,0,CR,9844,CR,0,CR,9844,CR,0,CR,0,1" + pad + "\n" +
		"RC,3" + pad + "\n" + "FF,3" + pad + "\n"
	recs, err := parseSTL(t, in)
	require.NoError(t, err)
	require.Len(t, recs, 3)
	_, err = parseSTL(t, strings.Replace(in, "RF,HKD,10400,", "RF,HKD,10401,", 1))
	var pe *report.ParseError
	require.ErrorAs(t, err, &pe, "FH 1 is the first file: the report footer is checked")
	assert.Equal(t, 12, pe.Line)
	_, err = parseSTL(t, strings.Replace(in, "RC,3", "RC,4", 1))
	assert.ErrorIs(t, err, ErrFooterMismatch)
}
