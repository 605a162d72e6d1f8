package console

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// fieldRow is one field of a conflict's side-by-side view: its path in
// the payload ("data.amount") and its value in the first delivery and in
// the redelivery ("" when absent), Differs marking the fields that changed.
type fieldRow struct {
	Path          string
	First, Second string
	Differs       bool
}

// compareFields sets two JSON payloads side by side, field by field (nil
// when either is not JSON: the raw bodies are shown instead). Numbers keep
// their exact text.
func compareFields(first, second []byte) []fieldRow {
	a, okA := flatten(first)
	b, okB := flatten(second)
	if !okA || !okB {
		return nil
	}
	var paths []string
	for p := range a {
		paths = append(paths, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	out := make([]fieldRow, 0, len(paths))
	for _, p := range paths {
		out = append(out, fieldRow{Path: p, First: a[p], Second: b[p], Differs: a[p] != b[p]})
	}
	return out
}

// flatten maps every leaf of a JSON document to its path.
func flatten(b []byte) (map[string]string, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		join := func(k string) string {
			if prefix == "" {
				return k
			}
			return prefix + "." + k
		}
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(join(k), x)
			}
		case []any:
			for i, x := range v {
				walk(join(strconv.Itoa(i)), x)
			}
		default:
			t, _ := json.Marshal(v)
			out[prefix] = string(t)
		}
	}
	walk("", v)
	return out, true
}
