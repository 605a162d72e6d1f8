package report

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
)

// CSV reads a CSV report whose first record names the columns. Columns are
// looked up by header name (NormalizeHeader); unknown columns are ignored
// and their order does not matter. Records are read one at a time with a
// reused buffer: memory is bounded by the longest record.
type CSV struct {
	r      *csv.Reader
	seen   *recorder      // the bytes of the record being read, to place an error
	cols   map[string]int // normalized header → index
	header []string       // as the file spells it
	rec    []string
	// byName caches the index of each name asked for (-1: absent), so that
	// a lookup per cell does not normalize the name again.
	byName map[string]int
}

// NewCSV returns a reader over r. Records may have different field counts
// (PayPal mixes record types); a missing cell reads as "".
// A UTF-8 byte order mark at the start is skipped (PayPal's spec allows one
// since 9.0.3; before a quoted field it would break the CSV grammar).
// A record longer than DefaultLimits.MaxLine is refused (Bound): the CSV
// reader holds a record whole, and a quoted field that never closes would
// make the whole upload one record.
func NewCSV(r io.Reader) *CSV {
	br := bufio.NewReaderSize(Bound(r, Limits{MaxLine: DefaultLimits.MaxLine}, nil), 64<<10)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		_, _ = br.Discard(3)
	}
	seen := &recorder{r: br}
	cr := csv.NewReader(seen)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return &CSV{r: cr, seen: seen}
}

// recorder keeps the bytes read from the record being read on: a
// csv.ParseError gives a line and a byte column, not the field, and the
// field is found by reading those bytes again. Memory: the current record
// plus the csv.Reader's read-ahead.
type recorder struct {
	r    io.Reader
	buf  []byte
	base int64 // input offset of buf[0]
	cur  int64 // input offset where the record being read starts
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// forget moves the record start to input offset off (the end of the last
// record read). The bytes before it are dropped in chunks, so that a file
// of short records is not copied once per record.
func (r *recorder) forget(off int64) {
	r.cur = off
	if k := off - r.base; k >= 32<<10 && k <= int64(len(r.buf)) {
		r.buf = append(r.buf[:0], r.buf[k:]...)
		r.base = off
	}
}

// record is the bytes read of the record being read.
func (r *recorder) record() []byte {
	if k := r.cur - r.base; k >= 0 && k <= int64(len(r.buf)) {
		return r.buf[k:]
	}
	return nil
}

// fieldAt is the 0-based index of the field holding the byte at (line,
// column) of a record that starts at line start, its bytes rec: the field
// separators before that byte outside quotes, counted. Each '"' toggles
// quoting, which also reads a doubled quote inside a quoted field right.
func fieldAt(rec []byte, start, line, column int) int {
	at, l, col := 0, start, 1
	for at < len(rec) && (l < line || (l == line && col < column)) {
		if rec[at] == '\n' {
			l, col = l+1, 1
		} else {
			col++
		}
		at++
	}
	field, quoted := 0, false
	for _, b := range rec[:at] {
		switch {
		case b == '"':
			quoted = !quoted
		case b == ',' && !quoted:
			field++
		}
	}
	return field
}

// Next reads the next record. It returns io.EOF at the end and a *ParseError
// for a record the CSV grammar refuses.
func (c *CSV) Next() error {
	rec, err := c.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			// pe.Column is a byte in the line, not a field index.
			i := fieldAt(c.seen.record(), pe.StartLine, pe.Line, pe.Column)
			return &ParseError{Line: pe.Line, Column: c.name(i), Err: pe.Err}
		}
		return err
	}
	c.seen.forget(c.r.InputOffset())
	c.rec = rec
	return nil
}

// name is the header name of the field at index i, when known.
func (c *CSV) name(i int) string {
	if i >= 0 && i < len(c.header) {
		return c.header[i]
	}
	return ""
}

// SetHeader takes the current record as the header (from field from on:
// PayPal's CH record starts with the record type).
func (c *CSV) SetHeader(from int) error {
	c.header = make([]string, len(c.rec))
	c.cols = make(map[string]int, len(c.rec))
	c.byName = make(map[string]int, len(c.rec))
	for i := from; i < len(c.rec); i++ {
		h := c.rec[i]
		c.header[i] = h
		k := NormalizeHeader(h)
		if k == "" {
			continue
		}
		if _, dup := c.cols[k]; dup {
			return &ParseError{Line: c.Line(), Column: h, Err: fmt.Errorf("column %q appears twice in the header", h)}
		}
		c.cols[k] = i
	}
	return nil
}

// ReadHeader reads the first record as the header.
func (c *CSV) ReadHeader() error {
	if err := c.Next(); err != nil {
		if errors.Is(err, io.EOF) {
			return &ParseError{Line: 1, Err: errors.New("empty file: no header")}
		}
		return err
	}
	return c.SetHeader(0)
}

// Require checks that the header has every named column.
func (c *CSV) Require(names ...string) error {
	for _, n := range names {
		if !c.Has(n) {
			return &ParseError{Line: 1, Column: n, Err: fmt.Errorf("the header has no column %q", n)}
		}
	}
	return nil
}

// index is the field index of the named column, -1 when absent.
func (c *CSV) index(name string) int {
	if i, ok := c.byName[name]; ok {
		return i
	}
	i, ok := c.cols[NormalizeHeader(name)]
	if !ok {
		i = -1
	}
	if c.byName != nil {
		c.byName[name] = i
	}
	return i
}

// Has reports whether the header names the column.
func (c *CSV) Has(name string) bool { return c.index(name) >= 0 }

// Field returns the current record's raw field at index i ("" when short).
func (c *CSV) Field(i int) string {
	if i < len(c.rec) {
		return c.rec[i]
	}
	return ""
}

// Len is the number of fields of the current record.
func (c *CSV) Len() int { return len(c.rec) }

// Get returns the cell of the named column in the current record; "" when
// the column is absent or the record is short.
func (c *CSV) Get(name string) string {
	i := c.index(name)
	if i < 0 || i >= len(c.rec) {
		return ""
	}
	return c.rec[i]
}

// Line is the 1-based line of the file the current record starts on.
func (c *CSV) Line() int {
	line, _ := c.r.FieldPos(0)
	return line
}

// Err returns a *ParseError at the current record's line for the named column.
func (c *CSV) Err(column string, err error) *ParseError {
	line := c.Line()
	if i := c.index(column); i >= 0 {
		if i < len(c.rec) {
			line, _ = c.r.FieldPos(i)
		}
		column = c.header[i]
	}
	return &ParseError{Line: line, Column: column, Err: err}
}

// Raw returns a JSON object of the named columns of the current record
// (name as given → cell), in the order given, skipping absent columns: the
// audit copy of a line. The returned slice is new on each call (one
// allocation, sized in advance).
func (c *CSV) Raw(names ...string) []byte {
	size := 2
	for _, n := range names {
		if i := c.index(n); i >= 0 {
			size += len(n) + 6
			if i < len(c.rec) {
				size += len(c.rec[i]) + len(c.rec[i])/8
			}
		}
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	first := true
	for _, n := range names {
		i := c.index(n)
		if i < 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, n)
		b = append(b, ':')
		v := ""
		if i < len(c.rec) {
			v = c.rec[i]
		}
		b = appendJSONString(b, v)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 is escaped
// byte-wise by strconv's rules, which JSON readers accept for the ASCII
// range; importers refuse invalid UTF-8 in ids before this point anyway.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"' || ch == '\\':
			b = append(b, '\\', ch)
		case ch < 0x20:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[ch>>4], "0123456789abcdef"[ch&15])
		default:
			b = append(b, ch)
		}
	}
	return append(b, '"')
}
