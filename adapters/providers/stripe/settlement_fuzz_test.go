package stripe

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/delivery"
)

// FuzzParseSettlement: whatever the bytes, the importer never panics, fails
// only with a *report.ParseError on a line of the file, and hands on only
// lines that make valid deliveries.
func FuzzParseSettlement(f *testing.F) {
	for _, name := range []string{"testdata/settlement/payout_reconciliation.itemized.5.csv", "testdata/settlement/balance_transactions.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if i := bytes.IndexByte(b, '\n'); i > 0 {
			f.Add(b[:i+1])                                   // the header alone
			f.Add(append(append([]byte{}, b[:i+1]...), ',')) // and a stray cell
		}
		f.Add(b[:len(b)/2]) // cut mid-record
	}
	f.Add([]byte(""))
	f.Add([]byte("\uFEFF"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		err := ParseSettlement(bytes.NewReader(data), report.Options{}, func(r report.Record) error {
			if err := delivery.Settled(r.Line, r.Raw).Validate(); err != nil {
				t.Fatalf("importer passed an invalid line %+v: %v", r.Line, err)
			}
			if r.Pos < 1 || r.Pos > lines {
				t.Fatalf("record at line %d of a %d-line file", r.Pos, lines)
			}
			return nil
		})
		if err == nil {
			return
		}
		var pe *report.ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v (%T) is not a *report.ParseError", err, err)
		}
		if pe.Line < 1 || pe.Line > lines {
			t.Fatalf("error at line %d of a %d-line file: %v", pe.Line, lines, err)
		}
	})
}
