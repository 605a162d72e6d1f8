package period

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrUnknownEventType is returned (wrapped) by Encode and Decode for a type
// they do not know.
var ErrUnknownEventType = errors.New("unknown period event type")

// The stored JSON shape of each event: private wire structs, so the domain
// types carry no tags and the shape changes only here. Times are RFC 3339
// with nanoseconds, in UTC.
type wireClosed struct {
	Period string `json:"period"`
	Zone   string `json:"zone"`
	Actor  string `json:"actor"`
	Note   string `json:"note"`
	At     string `json:"at"`
}

type wireReopened struct {
	Period string `json:"period"`
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
	At     string `json:"at"`
}

// Encode returns the stable type name and JSON body of e.
func Encode(e Event) (typ string, data []byte, err error) {
	var w any
	switch e := e.(type) {
	case Closed:
		w = wireClosed{e.Period.String(), e.Zone, e.Actor, e.Note, e.At.UTC().Format(time.RFC3339Nano)}
	case Reopened:
		w = wireReopened{e.Period.String(), e.Actor, e.Reason, e.At.UTC().Format(time.RFC3339Nano)}
	default:
		return "", nil, fmt.Errorf("%w: %T", ErrUnknownEventType, e)
	}
	data, err = json.Marshal(w)
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", e.Type(), err)
	}
	return e.Type(), data, nil
}

// Decode is the inverse of Encode. Unknown JSON fields are ignored.
func Decode(typ string, data []byte) (Event, error) {
	switch typ {
	case TypeClosed:
		var w wireClosed
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, fmt.Errorf("decode %s: %w", typ, err)
		}
		p, at, err := parseCommon(w.Period, w.At)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", typ, err)
		}
		return Closed{Period: p, Zone: w.Zone, Actor: w.Actor, Note: w.Note, At: at}, nil
	case TypeReopened:
		var w wireReopened
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, fmt.Errorf("decode %s: %w", typ, err)
		}
		p, at, err := parseCommon(w.Period, w.At)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", typ, err)
		}
		return Reopened{Period: p, Actor: w.Actor, Reason: w.Reason, At: at}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownEventType, typ)
}

// IsEventType reports whether typ names a period event, so that readers of
// the global feed can dispatch to this codec.
func IsEventType(typ string) bool { return typ == TypeClosed || typ == TypeReopened }

func parseCommon(period, at string) (Period, time.Time, error) {
	p, err := Parse(period)
	if err != nil {
		return Period{}, time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return Period{}, time.Time{}, fmt.Errorf("at: %w", err)
	}
	return p, t.UTC(), nil
}
