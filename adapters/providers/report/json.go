package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// lineCounter remembers where the newlines are in what a json.Decoder has
// read ahead, so that an offset can be turned into a line number. Offsets
// are asked for in increasing order, so newlines before the last one asked
// about are only counted, not kept: memory stays bounded by the decoder's
// buffer.
type lineCounter struct {
	r      io.Reader
	read   int64   // bytes read so far
	queue  []int64 // offsets of newlines not yet passed
	passed int     // newlines before the last offset asked about
}

func (lc *lineCounter) Read(p []byte) (int, error) {
	n, err := lc.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == '\n' {
			lc.queue = append(lc.queue, lc.read+int64(i))
		}
	}
	lc.read += int64(n)
	return n, err
}

// lineAt is the 1-based line of byte offset off.
func (lc *lineCounter) lineAt(off int64) int {
	i := 0
	for i < len(lc.queue) && lc.queue[i] < off {
		i++
	}
	lc.passed += i
	lc.queue = append(lc.queue[:0], lc.queue[i:]...)
	return lc.passed + 1
}

// JSONMember handles one member of the top-level object. For a member named
// in Lists, Elem is called for each element of its array, in order, with the
// element's raw bytes, its index and the line it starts on; for any other
// member, Other (when set) is called with the member's raw value. Members
// may come in any order.
type JSONWalk struct {
	Lists map[string]func(raw json.RawMessage, index, line int) error
	Other func(name string, raw json.RawMessage, line int) error
}

// Walk streams the top-level JSON object of r. Arrays named in Lists are
// decoded one element at a time (bounded memory); other members whole. A
// member named in Lists that is not an array, or null, is an error; one that
// is absent is not (an empty page).
func (w JSONWalk) Walk(r io.Reader) error {
	lc := &lineCounter{r: r}
	dec := json.NewDecoder(lc)
	dec.UseNumber()
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &ParseError{Line: lc.lineAt(se.Offset), Err: fmt.Errorf("invalid JSON: %v", se)}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return &ParseError{Line: lc.lineAt(lc.read), Err: errors.New("invalid JSON: the document ends early")}
		}
		var ue *json.UnmarshalTypeError
		if errors.As(err, &ue) {
			return &ParseError{Line: lc.lineAt(ue.Offset), Column: ue.Field, Err: fmt.Errorf("invalid JSON: %v", ue)}
		}
		return err
	}
	tok, err := dec.Token()
	if err != nil {
		return syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &ParseError{Line: lc.lineAt(dec.InputOffset()), Err: errors.New("the document is not a JSON object")}
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		name, _ := tok.(string)
		if elem, ok := w.Lists[name]; ok {
			if err := w.list(dec, lc, name, elem, syntax); err != nil {
				return err
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntax(err)
		}
		if w.Other != nil {
			if err := w.Other(name, raw, lc.lineAt(dec.InputOffset()-int64(len(raw)))); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return syntax(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &ParseError{Line: lc.lineAt(dec.InputOffset()), Err: errors.New("invalid JSON: data after the top-level object")}
	}
	return nil
}

func (w JSONWalk) list(dec *json.Decoder, lc *lineCounter, name string,
	elem func(json.RawMessage, int, int) error, syntax func(error) error) error {
	tok, err := dec.Token()
	if err != nil {
		return syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return &ParseError{Line: lc.lineAt(dec.InputOffset()), Column: name, Err: fmt.Errorf("%s must be an array", name)}
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntax(err)
		}
		line := lc.lineAt(dec.InputOffset() - int64(len(raw)))
		if err := elem(raw, i, line); err != nil {
			return err
		}
	}
	_, err = dec.Token() // ']'
	if err != nil {
		return syntax(err)
	}
	return nil
}
