package report

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/money"
)

func TestMajor(t *testing.T) {
	for _, c := range []struct {
		in   string
		cur  money.Currency
		sep  byte
		want int64
	}{
		{"10.50", "USD", 0, 1050}, {".91", "USD", 0, 91}, {"-.5", "EUR", 0, -50}, {"1000", "JPY", 0, 1000},
		{"10,50", "EUR", ',', 1050}, {"1.234", "KWD", 0, 1234}, {"100.00", "ISK", 0, 100},
	} {
		got, err := Major(c.in, c.cur, c.sep)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	for _, in := range []string{"", "10.001", "1e3", "1,000.00", "+1", "10000000000000.01"} {
		_, err := Major(in, "USD", 0)
		assert.ErrorIs(t, err, money.ErrInvalidAmount, in)
	}
	_, err := Major("10.50", "EUR", ',')
	assert.Error(t, err, "a dot where the separator is a comma")
}

func TestNormalizeHeader(t *testing.T) {
	assert.Equal(t, "transaction debit or credit", NormalizeHeader("\uFEFF Transaction  Debit or\tCredit "))
}

func TestCSVByHeaderName(t *testing.T) {
	c := NewCSV(strings.NewReader("\uFEFFb,A, c \n1,2,3\n\"x\ny\",5\n"))
	require.NoError(t, c.ReadHeader())
	require.NoError(t, c.Next())
	assert.Equal(t, "2", c.Get("a"))
	assert.Equal(t, "3", c.Get("C"))
	assert.Equal(t, "", c.Get("missing"))
	assert.JSONEq(t, `{"a":"2","b":"1"}`, string(c.Raw("a", "missing", "b")))
	require.NoError(t, c.Next())
	assert.Equal(t, 3, c.Line())
	assert.Equal(t, "", c.Get("c"), "a short record reads empty")
	pe := c.Err("A", errors.New("bad"))
	assert.Equal(t, 4, pe.Line, "the line of the field itself")
	assert.Equal(t, "A", pe.Column)
	assert.ErrorIs(t, c.Next(), io.EOF)

	c = NewCSV(strings.NewReader("a,a\n"))
	var perr *ParseError
	require.ErrorAs(t, c.ReadHeader(), &perr)
	assert.Equal(t, "a", perr.Column)

	c = NewCSV(strings.NewReader(""))
	require.ErrorAs(t, c.ReadHeader(), &perr)
	assert.Equal(t, 1, perr.Line)
}

func TestRawEscapes(t *testing.T) {
	c := NewCSV(strings.NewReader("k\n\"a\"\"b\\c\x01\"\n"))
	require.NoError(t, c.ReadHeader())
	require.NoError(t, c.Next())
	var m map[string]string
	require.NoError(t, json.Unmarshal(c.Raw("k"), &m))
	assert.Equal(t, "a\"b\\c\x01", m["k"])
}

func TestJSONWalkLines(t *testing.T) {
	doc := "{\n  \"before\": 1,\n  \"data\": [\n    {\"id\": 1},\n\n    {\"id\": 2}\n  ],\n  \"after\": {\"x\":\n 2}\n}\n"
	var lines []int
	var others []string
	err := JSONWalk{
		Lists: map[string]func(json.RawMessage, int, int) error{"data": func(raw json.RawMessage, i, line int) error {
			lines = append(lines, line)
			return nil
		}},
		Other: func(name string, raw json.RawMessage, line int) error {
			others = append(others, name)
			lines = append(lines, line)
			return nil
		},
	}.Walk(strings.NewReader(doc))
	require.NoError(t, err)
	assert.Equal(t, []int{2, 4, 6, 8}, lines)
	assert.Equal(t, []string{"before", "after"}, others)

	for _, c := range []struct {
		doc  string
		line int
	}{
		{"{\n\"data\": [\n{\"id\": 1},\n{\"id\": }\n]}", 4},
		{"{\"data\": [1,2]} trailing", 1},
		{"[\n]", 1},
		{"{\n\"data\": 5}", 2},
		{"{\"data\": [", 1},
	} {
		err := JSONWalk{Lists: map[string]func(json.RawMessage, int, int) error{
			"data": func(json.RawMessage, int, int) error { return nil }}}.Walk(strings.NewReader(c.doc))
		var pe *ParseError
		require.ErrorAs(t, err, &pe, c.doc)
		assert.Equal(t, c.line, pe.Line, "%q: %v", c.doc, err)
		assert.ErrorIs(t, err, ErrMalformed)
	}
}

// A CSV syntax error names the column of the field it is in: the csv
// package's column is a byte in the line, not a field index.
func TestCSVSyntaxErrorNamesTheField(t *testing.T) {
	for _, c := range []struct {
		doc    string
		line   int
		column string
	}{
		{"id,description,amount\n1,long text here,10\n2,a \"quoted\" word,3\n", 3, "description"},
		{"id,description,amount\n1,\"a, b\",1\"0\n", 2, "amount"},
		{"id,description,amount\n1,\"x,\ny\"\"z\",1\"0\n", 3, "amount"},
		{"id,description,amount\n1,\"never closed,10\n", 2, "description"},
		{"id,description,amount\n1,ok,2\n1,\"a\"b,3\n", 3, "description"},
		// far into a file: the bytes kept are dropped in chunks
		{"id,description,amount\n" + strings.Repeat("1,\"o,k\",2\n", 9000) + "1,x,\"3\"4\n", 9002, "amount"},
	} {
		r := NewCSV(strings.NewReader(c.doc))
		require.NoError(t, r.ReadHeader())
		var err error
		for err == nil {
			err = r.Next()
		}
		var pe *ParseError
		require.ErrorAs(t, err, &pe, c.doc)
		assert.Equal(t, c.column, pe.Column, "%q: %v", c.doc, err)
		assert.Equal(t, c.line, pe.Line, "%q: %v", c.doc, err)
	}
}
