// Package golden is test support for the stored formats: a test encodes a
// value as the code does today and compares it with a file committed from
// the encoding of the day that format was first stored (the inbox's rows,
// the events in the event stores), which must still decode. A file is
// written once, when it does not exist (-write-missing-golden), and never
// rewritten: data in those bytes is stored for good, so a change to a file
// is a change to what old data means. It reads and writes files, so it sits
// with the adapters rather than in the pure domain, whose tests import it.
package golden

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

var writeMissing = flag.Bool("write-missing-golden", false, "write the golden files of stored formats that do not exist yet")

// Stored returns the golden file at path, without its final newline. With
// -write-missing-golden, a file that does not exist yet is written first,
// with encoded (a new event type or variant gets its file).
func Stored(t testing.TB, path string, encoded []byte) []byte {
	t.Helper()
	if *writeMissing {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(bytes.Clone(encoded), '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return Read(t, path)
}

// Read returns the golden file at path, without its final newline (a form
// the code does not write: jsonb's, as Postgres gives a stored object
// back, reordered and spaced; made with psql:
// SELECT '<json>'::jsonb::text).
func Read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file: %v (a new stored shape: run the test with -write-missing-golden)", err)
	}
	return bytes.TrimSuffix(b, []byte("\n"))
}
