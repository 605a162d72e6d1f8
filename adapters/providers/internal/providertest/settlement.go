package providertest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/delivery"
)

// FuzzSettlement is every report importer's fuzz target: whatever the
// bytes, parse never panics, fails only with a *report.ParseError on a line
// of the file, and hands on only lines that make valid deliveries. The seeds
// are the files (from the provider's documentation), their header alone,
// the header with a stray cell, each cut mid-record, and a few degenerate
// inputs.
func FuzzSettlement(f *testing.F, parse func(io.Reader, report.Options, report.Func) error, files ...string) {
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(f, err)
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
		err := parse(bytes.NewReader(data), report.Options{}, func(r report.Record) error {
			require.NoError(t, delivery.Settled(r.Line, r.Raw).Validate(), "importer passed an invalid line %+v", r.Line)
			require.True(t, r.Pos >= 1 && r.Pos <= lines, "record at line %d of a %d-line file", r.Pos, lines)
			return nil
		})
		if err == nil {
			return
		}
		var pe *report.ParseError
		require.True(t, errors.As(err, &pe), "error %v (%T) is not a *report.ParseError", err, err)
		require.True(t, pe.Line >= 1 && pe.Line <= lines, "error at line %d of a %d-line file: %v", pe.Line, lines, err)
	})
}

// ParseReport runs a report importer over data and returns every record it
// handed on, with the importer's error.
func ParseReport(parse report.Parser, data string, opt report.Options) ([]report.Record, error) {
	var out []report.Record
	err := parse(strings.NewReader(data), opt, func(r report.Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}
