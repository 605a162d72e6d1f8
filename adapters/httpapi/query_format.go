package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

type format int

const (
	formatJSON format = iota
	formatCSV
)

func parseFormat(q url.Values) (format, error) {
	switch q.Get("format") {
	case "", "json":
		return formatJSON, nil
	case "csv":
		return formatCSV, nil
	}
	return 0, fmt.Errorf("%w: format: must be json or csv, got %q", errBadParameter, q.Get("format"))
}

// parseCurrency validates an optional ISO 4217 code (any case) and returns
// it upper-cased.
func parseCurrency(q url.Values, name string) (string, error) {
	v := q.Get(name)
	if v == "" {
		return "", nil
	}
	c, err := money.ParseCurrency(v)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", errBadParameter, name, err)
	}
	return string(c), nil
}

// parseTime parses an optional RFC 3339 timestamp. A '+' of the offset
// arrives as a space when the caller did not percent-encode it
// ("2026-01-02T10:00:00+01:00" in a raw query string); that one case is
// accepted as the '+' it was.
func parseTime(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil && len(v) > 19 && strings.Count(v, " ") == 1 && strings.LastIndexByte(v, ' ') >= 19 {
		t, err = time.Parse(time.RFC3339Nano, strings.Replace(v, " ", "+", 1))
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s: want an RFC 3339 timestamp like 2026-01-02T15:04:05Z, got %q", errBadParameter, name, v)
	}
	return t, nil
}

func parseLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPageSize {
		return 0, fmt.Errorf("%w: limit: must be an integer from 1 to %d, got %q", errBadParameter, maxPageSize, v)
	}
	return n, nil
}

// Ledger cursors are opaque to clients: base64url (no padding) of a small
// JSON document with a version, so the format can change without old
// cursors being misread, followed by a truncated SHA-256 of that document,
// so that an edited or truncated cursor is refused rather than silently read
// as another position. (The checksum is not a secret: a cursor grants
// nothing a client could not reach by paging.) Decoding is strict (checksum,
// known version, positive id, canonical JSON); anything else is a 400
// naming the cursor.
type cursorV1 struct {
	V     int   `json:"v"`
	After int64 `json:"after"`
}

const cursorSumLen = 6

func encodeCursor(afterID int64) string {
	b, _ := json.Marshal(cursorV1{V: 1, After: afterID})
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:cursorSumLen]...))
}

func decodeCursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	bad := fmt.Errorf("%w: cursor: not a cursor this API handed out", errBadParameter)
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) <= cursorSumLen {
		return 0, bad
	}
	doc, sum := raw[:len(raw)-cursorSumLen], raw[len(raw)-cursorSumLen:]
	want := sha256.Sum256(doc)
	if !bytes.Equal(sum, want[:cursorSumLen]) {
		return 0, bad
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	var c cursorV1
	if err := dec.Decode(&c); err != nil || c.V != 1 || c.After < 1 {
		return 0, bad
	}
	if canonical, _ := json.Marshal(c); !bytes.Equal(doc, canonical) {
		return 0, bad
	}
	return c.After, nil
}

// rowWriter streams a list as JSON ({"<key>":[row,…]} plus trailing fields)
// or as RFC 4180 CSV with a header row. Nothing is written before the first
// row (or finish), so an error that comes before it can still be answered
// with a proper status.
type rowWriter struct {
	w       http.ResponseWriter
	format  format
	key     string
	header  []string
	csv     *csv.Writer
	started bool
	n       int
}

func newRowWriter(w http.ResponseWriter, f format, key string, header []string) *rowWriter {
	return &rowWriter{w: w, format: f, key: key, header: header}
}

func (o *rowWriter) start() error {
	o.started = true
	if o.format == formatCSV {
		o.w.Header().Set("Content-Type", "text/csv; charset=utf-8; header=present")
		o.w.WriteHeader(http.StatusOK)
		o.csv = csv.NewWriter(o.w)
		o.csv.UseCRLF = true // RFC 4180 line breaks
		return o.csv.Write(o.header)
	}
	o.w.Header().Set("Content-Type", "application/json")
	o.w.WriteHeader(http.StatusOK)
	key, _ := json.Marshal(o.key)
	_, err := fmt.Fprintf(o.w, "{%s:[", key)
	return err
}

// row writes one row: v as a JSON array element, or rec as a CSV record.
func (o *rowWriter) row(v any, rec []string) error {
	if !o.started {
		if err := o.start(); err != nil {
			return err
		}
	}
	o.n++
	if o.format == formatCSV {
		// csv.Writer's 4 KiB buffer passes each full buffer on to the
		// connection, so rows leave as they come.
		return o.csv.Write(rec)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if o.n > 1 {
		b = append([]byte{','}, b...)
	}
	_, err = o.w.Write(b)
	return err
}

// finish closes the list; in JSON, trailer's fields follow the list in the
// same object.
func (o *rowWriter) finish(trailer map[string]any) error {
	if !o.started {
		if err := o.start(); err != nil {
			return err
		}
	}
	if o.format == formatCSV {
		o.csv.Flush()
		return o.csv.Error()
	}
	var b strings.Builder
	b.WriteString("]")
	for k, v := range trailer {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.WriteString(",")
		b.Write(kb)
		b.WriteString(":")
		b.Write(vb)
	}
	b.WriteString("}\n")
	_, err := o.w.Write([]byte(b.String()))
	return err
}
