package csvexport_test

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/csvexport"
)

func TestNeutralizesFormulaCellsButNotAmounts(t *testing.T) {
	var buf bytes.Buffer
	w := csvexport.NewWriter(&buf, csvexport.Text("payment_id"), csvexport.Amount("amount"), csvexport.Text("details"))
	require.NoError(t, w.Write(`=HYPERLINK("http://evil","x")`, "-1000", "+1"))
	require.NoError(t, w.Write("@SUM(A1)", "12.50", "-2"))
	require.NoError(t, w.Write("\tcmd", "=1+1", "\rx"))
	require.NoError(t, w.Write("pay_1", "-1e3", "plain, with comma"))
	require.NoError(t, w.Write("short"))
	require.NoError(t, w.Flush())

	recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		{"payment_id", "amount", "details"},
		{`'=HYPERLINK("http://evil","x")`, "-1000", "'+1"},
		{"'@SUM(A1)", "12.50", "'-2"},
		{"'\tcmd", "'=1+1", "'x"}, // encoding/csv drops a \r inside a CRLF file's field
		{"pay_1", "'-1e3", "plain, with comma"},
		{"short", "", ""},
	}, recs)
	assert.Contains(t, buf.String(), "\r\n", "RFC 4180 line breaks")
}

func TestEmptyExportHasTheHeader(t *testing.T) {
	var buf bytes.Buffer
	w := csvexport.NewWriter(&buf, csvexport.Text("a"), csvexport.Amount("b"))
	require.NoError(t, w.Flush())
	assert.Equal(t, "a,b\r\n", buf.String())
}

func TestNeutralize(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "abc": "abc", "=": "'=", "+x": "'+x", "-x": "'-x", "@x": "'@x",
		"\tx": "'\tx", "\rx": "'\rx", " =x": " =x", "a=b": "a=b", "'=x": "'=x",
	} {
		assert.Equal(t, want, csvexport.Neutralize(in), "%q", in)
	}
}

func TestIsNumber(t *testing.T) {
	for _, s := range []string{"0", "-1", "1000", "12.50", "-0.01"} {
		assert.True(t, csvexport.IsNumber(s), s)
	}
	for _, s := range []string{"", "-", "+1", "1e3", "1.", ".5", "1,000", "=1", " 1", "1 "} {
		assert.False(t, csvexport.IsNumber(s), s)
	}
}

// A spreadsheet that splits on ';' must not see "=1+1" as a cell of its
// own: every text cell is quoted, plain amounts stay bare numbers.
func TestQuotesEveryTextCell(t *testing.T) {
	var buf bytes.Buffer
	w := csvexport.NewWriter(&buf, csvexport.Text("payment_id"), csvexport.Amount("amount"), csvexport.Text("details"))
	require.NoError(t, w.Write("a;=1+1", "-4000", `say "hi"`))
	require.NoError(t, w.Write("pay_1", "x;=1", ""))
	require.NoError(t, w.Write("two\nlines", "12.50", "a\rb"))
	require.NoError(t, w.Flush())
	assert.Equal(t, "payment_id,amount,details\r\n"+
		`"a;=1+1",-4000,"say ""hi"""`+"\r\n"+
		`"pay_1","x;=1",""`+"\r\n"+
		"\"two\r\nlines\",12.50,\"ab\"\r\n", buf.String())

	recs, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, []string{"a;=1+1", "-4000", `say "hi"`}, recs[1])
	assert.Equal(t, []string{"two\nlines", "12.50", "ab"}, recs[3])
}
