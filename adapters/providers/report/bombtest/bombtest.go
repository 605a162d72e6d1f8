// Package bombtest generates decompression bombs for tests (issue 33):
// built when asked, never stored, so that the repository stays small and
// the bombs exactly what each test says they are.
package bombtest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"sync"
)

var (
	gzipOnce sync.Once
	gzipBomb []byte
)

// GzipOneLine is a gzip of 256 MiB of 'a' and no line feed: about 260 KB,
// as the WeChat Pay bill of issue 33 was (255 KB). Built once per process,
// as 256 copies of one member of 1 MiB (a gzip file may hold members one
// after another, RFC 1952 2.2, and a reader inflates them as one stream):
// compressing 256 MiB took a minute under the race detector.
func GzipOneLine() []byte {
	gzipOnce.Do(func() {
		var member bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
		_, _ = zw.Write(bytes.Repeat([]byte{'a'}, 1<<20))
		_ = zw.Close()
		gzipBomb = bytes.Repeat(member.Bytes(), 256)
	})
	return gzipBomb
}

// ZipEmptyEntries streams a zip of n empty stored entries named "", as an
// io.Reader that builds it while it is read (n = 1M is about 76 MB, never
// held): each entry's local header (30 bytes), then the central directory
// (46 bytes per entry), then the end record (ZIP64 when n needs it).
func ZipEmptyEntries(n int) io.Reader {
	return io.MultiReader(
		&repeat{n: n, rec: localHeader()},
		&directory{n: n},
		bytes.NewReader(directoryEnd(n)),
	)
}

func localHeader() []byte {
	h := make([]byte, 30)
	copy(h, "PK\x03\x04")
	binary.LittleEndian.PutUint16(h[4:], 20) // version needed
	return h                                 // method 0, sizes 0, name ""
}

// repeat is rec n times.
type repeat struct {
	n, i, off int
	rec       []byte
}

func (r *repeat) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) && r.i < r.n {
		c := copy(p[w:], r.rec[r.off:])
		w, r.off = w+c, r.off+c
		if r.off == len(r.rec) {
			r.i, r.off = r.i+1, 0
		}
	}
	if w == 0 {
		return 0, io.EOF
	}
	return w, nil
}

// directory is the central directory: header i points at local header i.
type directory struct {
	n, i, off int
	rec       [46]byte
}

func (d *directory) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) && d.i < d.n {
		if d.off == 0 {
			d.rec = [46]byte{}
			copy(d.rec[:], "PK\x01\x02")
			binary.LittleEndian.PutUint16(d.rec[4:], 20)
			binary.LittleEndian.PutUint16(d.rec[6:], 20)
			binary.LittleEndian.PutUint32(d.rec[42:], uint32(d.i*30))
		}
		c := copy(p[w:], d.rec[d.off:])
		w, d.off = w+c, d.off+c
		if d.off == len(d.rec) {
			d.i, d.off = d.i+1, 0
		}
	}
	if w == 0 {
		return 0, io.EOF
	}
	return w, nil
}

// directoryEnd is the end record: the directory is n*46 bytes at n*30.
// Its 16-bit count is n's low bits, as writers that do not use ZIP64 leave
// it (archive/zip reads past it).
func directoryEnd(n int) []byte {
	e := make([]byte, 22)
	copy(e, "PK\x05\x06")
	binary.LittleEndian.PutUint16(e[8:], uint16(n))
	binary.LittleEndian.PutUint16(e[10:], uint16(n))
	binary.LittleEndian.PutUint32(e[12:], uint32(n*46))
	binary.LittleEndian.PutUint32(e[16:], uint32(n*30))
	return e
}
