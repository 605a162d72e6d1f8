package bankfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bankfile"
)

// collected is what a parse handed its sink.
type collected struct {
	format     bankfile.Format
	statements []bankfile.Statement
	entries    []bankfile.Entry
}

const samples = "../../docs/samples/bank/"

func parseAll(t testing.TB, path string) (collected, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return parseString(t, string(b))
}

// TestPublishedSamples reads the published statements of
// docs/samples/bank (SOURCES.md): those whose sums hold import, the others
// are refused naming where and why. Many published samples are anonymised
// by hand and no longer add up; the strict checks say so.
func TestPublishedSamples(t *testing.T) {
	for _, tc := range []struct {
		file                string
		format              bankfile.Format
		statements, entries int
	}{
		{"genkgo-camt053.v2.multi.statement.xml", bankfile.Camt053, 2, 2},
		{"genkgo-camt054.v2.xml", bankfile.Camt054, 1, 1},
		{"genkgo-camt054.v8.xml", bankfile.Camt054, 1, 1},
		{"moov-bai2-sample1.txt", bankfile.BAI2, 2, 17},
		{"moov-bai2-sample2.txt", bankfile.BAI2, 5, 4},
		{"wolph-betterplace-sepa_mt9401.sta", bankfile.MT940, 26, 97},
		{"wolph-jejik-sns.sta", bankfile.MT940, 2, 2},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c, err := parseAll(t, samples+tc.file)
			require.NoError(t, err)
			assert.Equal(t, tc.format, c.format)
			assert.Len(t, c.statements, tc.statements)
			assert.Len(t, c.entries, tc.entries)
			keys := map[string]bool{}
			for _, e := range c.entries {
				assert.NotEmpty(t, e.Key)
				assert.False(t, keys[e.Key], "key %s twice", e.Key)
				keys[e.Key] = true
			}
		})
	}
	for _, tc := range []struct{ file, pos, field, words string }{
		{"genkgo-camt053.v2.minimal.xml", "/Document/BkToCstmrStmt/Stmt[1]/Bal[2]/Amt", "Ccy", "balance in SEK, the account is in EUR"},
		{"genkgo-camt053.v4.xml", "/Document/BkToCstmrStmt/Stmt[1]/Bal[2]/Amt", "Ccy", "balance in SEK"},
		{"genkgo-camt053.v8.xml", "/Document/BkToCstmrStmt/Stmt[1]/Bal[2]/Amt", "Ccy", "balance in SEK"},
		{"moov-bai2-sample4-continuations-newline-delimited.txt", "line 22", "49 total", "says -1260161341762"},
		{"wolph-jejik-abnamro.sta", "line 27", ":62F:", "plus the :61: lines -321.44 is 2914.84, the closing balance says 876.84"},
		{"wolph-jejik-ing.sta", "line 26", ":62F:", "the closing balance says 3.47"},
		{"wolph-jejik-triodos.sta", "line 12", ":62F:", "the closing balance says 4370.79"},
		{"wolph-cmxl-mt940.sta", "line 4", ":60F:", `unknown currency: "DEM"`},
		{"wolph-jejik-knab.sta", "line 17", ":61: amount", `"500" is not a SWIFT amount`},
		{"wolph-jejik-rabobank.sta", "line 6", ":61: reference", "longer than 16 characters"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := parseAll(t, samples+tc.file)
			refused(t, err, tc.pos, tc.field, tc.words)
		})
	}
}

// fuzzSeeds adds every sample of a format and the constructed ones.
func fuzzSeeds(f *testing.F, match func(name string) bool, extra ...string) {
	files, _ := filepath.Glob(samples + "*")
	for _, p := range files {
		if match(filepath.Base(p)) {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// fuzzParse checks what holds for any input: no panic, and a file accepted
// is consistent: every entry has a key, every statement's booked entries sum
// to what it reports, and opening plus booked is closing where the format
// checks it.
func fuzzParse(t *testing.T, format bankfile.Format, data []byte) {
	var sums []int64
	var cur int64
	_ = bankfile.ParseFormat(format, bytes.NewReader(data), bankfile.Sink{
		Begin: func(*bankfile.Statement) error { cur = 0; return nil },
		Entry: func(_ *bankfile.Statement, e bankfile.Entry) error {
			if e.Key == "" {
				t.Fatalf("an entry without a key: %+v", e)
			}
			if e.Booked {
				cur += e.Amount
			}
			return nil
		},
		End: func(s *bankfile.Statement) error {
			if s.Booked != cur {
				t.Fatalf("statement reports %d booked, its entries sum to %d", s.Booked, cur)
			}
			if (s.Format == bankfile.Camt053 || s.Format == bankfile.MT940) && s.Opening.Amount+s.Booked != s.Closing.Amount {
				t.Fatalf("accepted a statement whose sums disagree: %+v", s)
			}
			sums = append(sums, cur)
			return nil
		},
	})
}

func FuzzCamt(f *testing.F) {
	fuzzSeeds(f, func(n string) bool { return strings.HasSuffix(n, ".xml") },
		camt("camt.053", 2, 1, "10.00", "79.50", "", credit, debit), camt("camt.054", 13, 0, "", "", "", credit))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, bankfile.Camt053, data) })
}

func FuzzMT940(f *testing.F) {
	fuzzSeeds(f, func(n string) bool { return strings.HasSuffix(n, ".sta") }, mt940Split)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, bankfile.MT940, data) })
}

func FuzzBAI2(f *testing.F) {
	fuzzSeeds(f, func(n string) bool { return strings.Contains(n, "bai2") }, bai2File)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, bankfile.BAI2, data) })
}

func FuzzCSV(f *testing.F) {
	fuzzSeeds(f, func(string) bool { return false },
		"date,amount,currency,reference,description\n2026-03-03,100.00,EUR,B-1,STRIPE po_1ABC\n2026-03-03,-1.5,EUR,B-2,\n")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, bankfile.CSV, data) })
}
