package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/params"
	"github.com/onceledger/onceledger/projections/views"
)

type format int

const (
	formatJSON format = iota
	formatCSV
)

// query reads a request's query parameters with the parser both front
// ends share (package params: each error a 400 naming the parameter), plus
// what only /v1 has: ?format=, the page size and the ledger cursor.
type query struct{ *params.Params }

func newQuery(r *http.Request) *query { return &query{params.New(r.URL.Query())} }

// format is ?format=json|csv (default json).
func (p *query) format() format {
	switch v := p.Get("format"); v {
	case "", "json":
		return formatJSON
	case "csv":
		return formatCSV
	default:
		p.Fail("format: must be json or csv, got %q", v)
		return formatJSON
	}
}

// limit is the page size, 1 to maxPageSize (default defaultPageSize).
func (p *query) limit() int { return p.Limit(defaultPageSize, maxPageSize) }

// booked is ?time=effective|booked (default effective): whether as_of,
// from and to compare with the entries' booked time (when the ledger
// recorded them) rather than their effective time (when the provider says
// they happened).
func (p *query) booked() bool { return p.OneOf("time", "effective", "booked") == "booked" }

// cursor is the entry after which a ledger page starts (nil: from the
// start).
func (p *query) cursor() *views.EntryKey {
	k, err := decodeCursor(p.Get("cursor"))
	p.SetErr(err)
	return k
}

// Ledger cursors are opaque to clients: base64url (no padding) of a small
// JSON document with a version, so the format can change without old
// cursors being misread, followed by a truncated SHA-256 of that document,
// so that an edited or truncated cursor is refused rather than silently read
// as another position. (The checksum is not a secret: a cursor grants
// nothing a client could not reach by paging.) Decoding is strict (checksum,
// known version, canonical JSON); anything else is a 400 naming the cursor.
//
// Version 2 holds the last entry's stable key (views.EntryKey: feed
// position, event id, posting index), which a rebuild's swap keeps.
// Version 1 held the row id, which a rebuild renumbers: such a cursor is
// refused with a 400 that says so, rather than read as a place it no
// longer names.
type cursorV2 struct {
	V       int    `json:"v"`
	Commit  uint64 `json:"c"`
	Prepare uint64 `json:"p"`
	EventID string `json:"e"`
	Index   int    `json:"i"`
}

const cursorSumLen = 6

func encodeCursor(k views.EntryKey) string {
	b, _ := json.Marshal(cursorV2{V: 2, Commit: k.Position.Commit, Prepare: k.Position.Prepare,
		EventID: k.EventID.String(), Index: k.PostingIndex})
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:cursorSumLen]...))
}

func decodeCursor(s string) (*views.EntryKey, error) {
	if s == "" {
		return nil, nil
	}
	bad := fmt.Errorf("%w: cursor: not a cursor this API handed out", errBadParameter)
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) <= cursorSumLen {
		return nil, bad
	}
	doc, sum := raw[:len(raw)-cursorSumLen], raw[len(raw)-cursorSumLen:]
	want := sha256.Sum256(doc)
	if !bytes.Equal(sum, want[:cursorSumLen]) {
		return nil, bad
	}
	var version struct {
		V int `json:"v"`
	}
	if json.Unmarshal(doc, &version) == nil && version.V == 1 {
		return nil, fmt.Errorf("%w: cursor: an old-format cursor (by row id, which a rebuild renumbers) is no longer accepted; "+
			"start paging again without a cursor", errBadParameter)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	var c cursorV2
	if err := dec.Decode(&c); err != nil || c.V != 2 || c.Index < 0 ||
		c.Commit > math.MaxInt64 || c.Prepare > math.MaxInt64 {
		return nil, bad
	}
	id, err := uuid.Parse(c.EventID)
	if err != nil {
		return nil, bad
	}
	c.EventID = id.String() // canonical: the lower-case hyphenated form encodeCursor writes
	if canonical, _ := json.Marshal(c); !bytes.Equal(doc, canonical) {
		return nil, bad
	}
	return &views.EntryKey{Position: eventstore.Position{Commit: c.Commit, Prepare: c.Prepare}, EventID: id, PostingIndex: c.Index}, nil
}

// rowWriter streams a list as JSON ({"<key>":[row,…]} plus trailing fields)
// or as RFC 4180 CSV with a header row, written by csvexport: provider
// supplied ids and details are attacker-controlled, so a text cell that a
// spreadsheet would run as a formula is neutralized; the columns named in
// amounts stay numbers while they are plain decimals. Nothing is written
// before the first row (or finish), so an error that comes before it can
// still be answered with a proper status.
type rowWriter struct {
	w       http.ResponseWriter
	format  format
	key     string
	cols    []csvexport.Column
	csv     *csvexport.Writer
	started bool
	n       int
}

func newRowWriter(w http.ResponseWriter, f format, key string, header []string, amounts ...string) *rowWriter {
	cols := make([]csvexport.Column, len(header))
	for i, h := range header {
		cols[i] = csvexport.Column{Name: h, Numeric: slices.Contains(amounts, h)}
	}
	return &rowWriter{w: w, format: f, key: key, cols: cols}
}

func (o *rowWriter) start() error {
	o.started = true
	if o.format == formatCSV {
		o.w.Header().Set("Content-Type", "text/csv; charset=utf-8; header=present")
		o.w.WriteHeader(http.StatusOK)
		o.csv = csvexport.NewWriter(o.w, o.cols...) // RFC 4180, CRLF
		return nil
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
		// The csv.Writer's 4 KiB buffer under csvexport passes each full
		// buffer on to the connection, so rows leave as they come.
		return o.csv.Write(rec...)
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
		return o.csv.Flush()
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
