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
// file; the report footer (RF, RC) is in the last one. Each file imports on
// its own, checked against its own footer.
func TestSplitSTLImportsFileByFile(t *testing.T) {
	sh := `"SH",2026/11/30 00:00:00 -0800,2026/11/30 23:59:59 -0800,"X",""` + "\n"
	ch := `"CH","Transaction ID","Transaction Event Code","Transaction Debit or Credit","Gross Transaction Amount","Gross Transaction Currency","Transaction Completion Date"` + "\n"
	first := `"RH",2026/12/01 02:44:19 -0800,"A","X",009` + "\n" + `"FH",01` + "\n" + sh + ch +
		`"SB","W1","T0400","DR",500,"USD",2026/11/30 23:00:00 -0800` + "\n" + `"SC",1` + "\n" + `"FF",1` + "\n"
	second := `"FH",02` + "\n" + sh + ch +
		`"SB","W2","T0400","DR",700,"USD",2026/11/30 23:10:00 -0800` + "\n" + `"SC",1` + "\n" +
		`"RF","USD",0,1200,0,0,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,"CR",0,2` + "\n" + `"RC",2` + "\n" + `"FF",1` + "\n"
	for i, f := range []string{first, second} {
		recs, err := parseSTL(t, f)
		require.NoError(t, err, "file %d", i+1)
		require.Len(t, recs, 1)
	}
	_, err := parseSTL(t, strings.TrimSuffix(second, `"FF",1`+"\n"))
	assert.ErrorIs(t, err, report.ErrMalformed, "the second file cut short")
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
