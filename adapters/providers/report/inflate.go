package report

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Decompression bombs (issue 33): a 255 KB gzip that inflates to 256 MiB
// on one line took the server from 141 MB to 1.7 GB, since the CSV reader
// holds a line whole; an Alipay zip of a million empty entries cost
// 225 MB in the directory archive/zip builds before anything is read.
// Every archive a report arrives in is opened through this file, which
// refuses it as soon as one limit is crossed, with an error naming the
// limit (a *ParseError: HTTP 400, exit status 1, nothing imported).

// Limits bound what a compressed report may cost. Legitimate bills stay far
// below each: a month of WeChat Pay or Alipay trades is tens of MB of CSV,
// compresses 5 to 20 times, and its longest line is a few hundred bytes.
type Limits struct {
	// MaxBytes: inflated bytes of the file (a zip: of the entry read).
	MaxBytes int64
	// MaxRatio: inflated bytes per compressed byte, checked once
	// RatioFloor bytes were inflated (a small file's ratio says nothing).
	MaxRatio   int64
	RatioFloor int64
	// MaxEntries: entries of a zip's central directory, counted before
	// archive/zip reads (and allocates for) any.
	MaxEntries int
	// MaxLine: bytes of one line of the inflated text; a quoted CSV
	// field spanning lines makes them one (csvRecord).
	MaxLine int
}

// DefaultLimits are the limits of every import (docs/security.md).
var DefaultLimits = Limits{
	MaxBytes:   1 << 30,
	MaxRatio:   100,
	RatioFloor: 1 << 20,
	MaxEntries: 64,
	MaxLine:    1 << 20,
}

// ErrArchiveLimit is wrapped by every refusal of a limit here.
var ErrArchiveLimit = errors.New("compressed report over a limit")

// limitError is one limit crossed.
type limitError struct {
	limit string
	max   int64
}

func (e *limitError) Error() string {
	return fmt.Sprintf("%s: %s over the limit of %d (a decompression bomb?)", ErrArchiveLimit, e.limit, e.max)
}

func (e *limitError) Unwrap() error { return ErrArchiveLimit }

// overLimit is the *ParseError of a limit crossed at line.
func overLimit(line int, limit string, max int64) *ParseError {
	return &ParseError{Line: max1(line), Err: &limitError{limit: limit, max: max}}
}

func max1(n int) int { return max(n, 1) }

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// bounded reads inflated bytes and fails with a *ParseError as soon as a
// limit is crossed: total bytes, ratio to the compressed bytes consumed
// (compressed() at the time), line length (of a CSV record: a quoted
// field spanning lines counts them as one).
type bounded struct {
	r          io.Reader
	l          Limits
	compressed func() int64
	n          int64
	line       int // bytes of the current CSV record (csvRecord)
	lines      int // line feeds seen, for the error's line number
	csv        csvRecord
	byLine     bool // a line feed always ends a record (boundLines)
	err        error
}

// Bound wraps an inflating reader with the limits; compressed reports the
// compressed bytes consumed so far (nil: no ratio check). The line limit
// bounds a CSV record as encoding/csv reads the whole stream (csvRecord).
func Bound(r io.Reader, l Limits, compressed func() int64) io.Reader {
	return &bounded{r: r, l: l, compressed: compressed}
}

// boundLines is Bound for text read line by line, each line parsed alone
// (Alipay's detail bill): a quote that does not close on its line joins
// nothing, so the line limit bounds lines.
func boundLines(r io.Reader, l Limits, compressed func() int64) io.Reader {
	return &bounded{r: r, l: l, compressed: compressed, byLine: true}
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	if lerr := b.account(p[:n]); lerr != nil {
		b.err = lerr
		return 0, lerr
	}
	return n, err
}

func (b *bounded) account(p []byte) error {
	b.n += int64(len(p))
	if b.l.MaxBytes > 0 && b.n > b.l.MaxBytes {
		return overLimit(b.lines+1, "inflated size in bytes", b.l.MaxBytes)
	}
	if b.compressed != nil && b.l.MaxRatio > 0 && b.n > b.l.RatioFloor {
		if c := b.compressed(); c > 0 && b.n/c > b.l.MaxRatio {
			return overLimit(b.lines+1, "compression ratio", b.l.MaxRatio)
		}
	}
	for _, c := range p {
		if c == '\n' {
			b.lines++
		}
		if b.byLine && c == '\n' || !b.byLine && b.csv.step(c) {
			b.line = 0
			continue
		}
		b.line++
		if b.l.MaxLine > 0 && b.line > b.l.MaxLine {
			return overLimit(b.lines+1-b.csv.spanned, "line length in bytes", int64(b.l.MaxLine))
		}
	}
	return nil
}

// csvRecord follows where a CSV record ends, as encoding/csv (LazyQuotes,
// the reader of every bill) reads it: a line feed inside a quoted field
// does not end it. The line limit bounds what the CSV reader holds whole,
// which is a record: bounding lines alone let a field that opens a quote
// and never closes it join any number of short lines into one record held
// in memory (within every ratio, or not compressed at all).
type csvRecord struct {
	state   csvState
	spanned int // line feeds inside the current record, for the error's line
}

type csvState uint8

const (
	fieldStart  csvState = iota
	unquoted             // in a field that does not start with '"': quotes are data
	quoted               // in a field that starts with '"'
	quoteSeen            // a '"' in a quoted field: its end, or the first of ""
	quoteSeenCR          // then '\r' (encoding/csv reads "\r\n" as "\n")
)

// step takes the next byte; true when it ends the record.
func (r *csvRecord) step(c byte) bool {
	switch r.state {
	case quoted:
		if c == '"' {
			r.state = quoteSeen
		} else if c == '\n' {
			r.spanned++
		}
		return false
	case quoteSeen:
		switch c {
		case '"': // an escaped quote
			r.state = quoted
			return false
		case '\r':
			r.state = quoteSeenCR
			return false
		}
		r.state = unquoted // the field ended: the rest as after an unquoted field
		if c != ',' && c != '\n' {
			r.state = quoted // a bare quote inside the field (LazyQuotes)
			return r.step(c)
		}
	case quoteSeenCR:
		if c != '\n' {
			r.state = quoted // '"' and '\r' were data
			return r.step(c)
		}
	}
	switch c {
	case '\n':
		r.state, r.spanned = fieldStart, 0
		return true
	case ',':
		r.state = fieldStart
	case '"':
		if r.state == fieldStart {
			r.state = quoted
		}
	default:
		r.state = unquoted
	}
	return false
}

// Gunzip returns the inflated content of the gzip stream br holds, bounded
// by l. The caller closes nothing: the gzip reader has no resources.
func Gunzip(br *bufio.Reader, l Limits) (io.Reader, error) {
	c := &counter{r: br}
	gz, err := gzip.NewReader(c)
	if err != nil {
		return nil, Errorf(1, "", "not a readable gzip file: %v", err)
	}
	// A member after the first is read as its continuation (gzip's
	// multistream): it is bounded the same, the counts run on.
	return Bound(gz, l, func() int64 { return c.n }), nil
}

// OpenZip reads a zip's directory once the entries archive/zip would
// read are counted (without allocating per entry) within l.MaxEntries, then
// checks the count archive/zip found.
func OpenZip(r io.ReaderAt, size int64, l Limits) (*zip.Reader, error) {
	if l.MaxEntries > 0 {
		n, err := zipEntries(r, size, l.MaxEntries+1)
		if err != nil {
			return nil, Errorf(1, "", "not a readable zip: %v", err)
		}
		if n > l.MaxEntries {
			return nil, overLimit(1, "zip entries", int64(l.MaxEntries))
		}
	}
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, Errorf(1, "", "not a readable zip: %v", err)
	}
	if l.MaxEntries > 0 && len(z.File) > l.MaxEntries {
		return nil, overLimit(1, "zip entries", int64(l.MaxEntries))
	}
	// OpenEntry takes an entry's ratio against its declared compressed
	// size, which archive/zip never checks against the file: an entry
	// declaring gigabytes would make any bomb's ratio look small.
	for _, f := range z.File {
		off, err := f.DataOffset()
		if err != nil {
			return nil, Errorf(1, "", "not a readable zip: entry %q: %v", f.Name, err)
		}
		if off > size || f.CompressedSize64 > uint64(size-off) {
			return nil, Errorf(1, "", "not a readable zip: entry %q declares %d compressed bytes, the file holds %d after its header",
				f.Name, f.CompressedSize64, size-off)
		}
	}
	return z, nil
}

// OpenEntry opens one zip entry of a zip OpenZip opened, bounded by l: its
// ratio is taken against the entry's compressed size, which archive/zip
// never reads past and OpenZip checked against the file. The entry is
// bounded by lines (boundLines): the one zip reports arrive in is Alipay's,
// whose detail bill is read a line at a time.
func OpenEntry(f *zip.File, l Limits) (io.ReadCloser, error) {
	if l.MaxBytes > 0 && f.UncompressedSize64 > uint64(l.MaxBytes) {
		return nil, overLimit(1, "inflated size in bytes", l.MaxBytes)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	compressed := int64(min(f.CompressedSize64, 1<<62))
	return struct {
		io.Reader
		io.Closer
	}{boundLines(rc, l, func() int64 { return compressed }), rc}, nil
}

// zipEntries counts, up to limit, the central directory headers
// archive/zip would read. Its reader ignores the record's entry count (16
// bits, it wraps) and reads headers one after another until one is not a
// header, starting at the directory's end minus its stated size, or at its
// stated offset when a header is there: both starts are counted, the
// larger count wins (APPNOTE.TXT 4.3.12 to 4.3.16; Go's
// archive/zip.readDirectoryEnd).
func zipEntries(r io.ReaderAt, size int64, limit int) (int, error) {
	end, dirSize, dirOffset, err := zipDirectoryEnd(r, size)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, start := range []int64{end - int64(dirSize), int64(dirOffset)} {
		if start >= 0 && start < size {
			n = max(n, countHeaders(r, start, size, limit))
		}
	}
	return n, nil
}

// countHeaders walks central directory headers from off, up to limit.
func countHeaders(r io.ReaderAt, off, size int64, limit int) int {
	var h [46]byte
	n := 0
	for n < limit && off+46 <= size {
		if _, err := r.ReadAt(h[:], off); err != nil || !bytes.Equal(h[:4], []byte("PK\x01\x02")) {
			break
		}
		off += 46 + int64(binary.LittleEndian.Uint16(h[28:])) + int64(binary.LittleEndian.Uint16(h[30:])) +
			int64(binary.LittleEndian.Uint16(h[32:]))
		n++
	}
	return n
}

// zipDirectoryEnd finds the end-of-central-directory record (its ZIP64
// counterpart when the record defers to it): where it is, the directory's
// stated size and offset.
func zipDirectoryEnd(r io.ReaderAt, size int64) (end int64, dirSize, dirOffset uint64, err error) {
	const eocdLen, maxComment = 22, 65535
	tail := min(size, eocdLen+maxComment)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, 0, err
	}
	i := findDirectoryEnd(buf)
	if i < 0 {
		return 0, 0, 0, errors.New("no end of central directory record")
	}
	rec, end := buf[i:], size-tail+int64(i)
	entries := binary.LittleEndian.Uint16(rec[10:])
	dirSize = uint64(binary.LittleEndian.Uint32(rec[12:]))
	dirOffset = uint64(binary.LittleEndian.Uint32(rec[16:]))
	if entries != 0xFFFF && dirSize != 0xFFFF && dirOffset != 0xFFFFFFFF {
		return end, dirSize, dirOffset, nil
	}
	// ZIP64: the locator sits just before the record, and names the
	// ZIP64 record, which archive/zip then takes as the directory's end;
	// without a locator the record's own values stand.
	var loc [20]byte
	if end < 20 {
		return end, dirSize, dirOffset, nil
	}
	if _, err := r.ReadAt(loc[:], end-20); err != nil || !bytes.Equal(loc[:4], []byte("PK\x06\x07")) {
		return end, dirSize, dirOffset, nil
	}
	off := binary.LittleEndian.Uint64(loc[8:])
	var z [56]byte
	if off > uint64(size) {
		return 0, 0, 0, errors.New("ZIP64 record out of the file")
	}
	if _, err := r.ReadAt(z[:], int64(off)); err != nil || !bytes.Equal(z[:4], []byte("PK\x06\x06")) {
		return 0, 0, 0, errors.New("no ZIP64 end of central directory record")
	}
	return int64(off), binary.LittleEndian.Uint64(z[40:]), binary.LittleEndian.Uint64(z[48:]), nil
}

// findDirectoryEnd is the offset in b of the last end-of-central-directory
// signature whose comment fits in b, as archive/zip looks for it.
func findDirectoryEnd(b []byte) int {
	for i := len(b) - 22; i >= 0; i-- {
		if b[i] == 'P' && b[i+1] == 'K' && b[i+2] == 0x05 && b[i+3] == 0x06 {
			if n := int(b[i+20]) | int(b[i+21])<<8; n+22+i <= len(b) {
				return i
			}
		}
	}
	return -1
}
