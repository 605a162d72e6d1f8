package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// record is one row of an answer described once: each field's name, its
// JSON value and its CSV cell, in column order. The JSON writer marshals it
// as an object in that order and the CSV writer takes its names as the
// header and its cells as the record, so a column cannot be added to one
// format and forgotten in the other.
type record []field

type field struct {
	name string
	json any
	cell string
	// amount marks a numeric column: its CSV cells stay bare numbers
	// (-4000, not the neutralized '-4000) an accountant can sum.
	amount bool
}

func textField(name, v string) field { return field{name: name, json: v, cell: v} }

// optText is null in JSON when empty.
func optText(name, v string) field {
	if v == "" {
		return field{name: name}
	}
	return field{name: name, json: v, cell: v}
}

func intField(name string, v int64) field {
	return field{name: name, json: v, cell: strconv.FormatInt(v, 10), amount: true}
}

// decimalField is a numeric text (an amount in major units, "-40.00").
func decimalField(name, v string) field { return field{name: name, json: v, cell: v, amount: true} }

func timeField(name string, t time.Time) field {
	return field{name: name, json: t.UTC(), cell: formatTime(t)}
}

// optTime is null in JSON when zero.
func optTime(name string, t time.Time) field {
	return field{name: name, json: timePtr(t), cell: formatTime(t)}
}

func (r record) names() []string {
	out := make([]string, len(r))
	for i, f := range r {
		out[i] = f.name
	}
	return out
}

// amounts names the numeric columns, for the CSV writer.
func (r record) amounts() []string {
	var out []string
	for _, f := range r {
		if f.amount {
			out = append(out, f.name)
		}
	}
	return out
}

func (r record) cells() []string {
	out := make([]string, len(r))
	for i, f := range r {
		out[i] = f.cell
	}
	return out
}

// MarshalJSON writes the fields as one object, in order.
func (r record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.name)
		v, err := json.Marshal(f.json)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
