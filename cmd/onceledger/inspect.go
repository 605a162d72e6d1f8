package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
)

type inspectCmd struct {
	Stream string `arg:"" help:"Stream id, e.g. payment-stripe-pi_123."`
	JSON   bool   `name:"json" help:"Print a JSON array instead of text."`
}

func (c *inspectCmd) Run(g *globals) error {
	return withEventStore(g, func(store eventstore.Store) error {
		return inspect(g.ctx, store, c.Stream, c.JSON, os.Stdout)
	})
}

// errEmptyStream is returned for a stream without events; the command then
// exits 1, so a script can tell a typo in a stream id from an empty answer.
var errEmptyStream = errors.New("has no events")

// streamReader is the part of the event store inspect needs.
type streamReader interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
}

var _ streamReader = eventstore.Store(nil)

// inspect writes the events of stream to w, in version order: text for a
// person, or (asJSON) one JSON array. Events that do not decode (a type this
// build does not know) are shown raw with the reason, not skipped: inspect is
// what one runs when something looks wrong.
func inspect(ctx context.Context, store streamReader, stream string, asJSON bool, w io.Writer) error {
	recs, err := store.ReadStream(ctx, stream)
	if err != nil {
		return fmt.Errorf("read stream %s: %w", stream, err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("stream %s %w", stream, errEmptyStream)
	}
	views := make([]eventView, 0, len(recs))
	for _, r := range recs {
		views = append(views, viewOf(r))
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(views)
	}
	return writeText(w, stream, views)
}

// eventView is one event as inspect shows it; its JSON form is the --json
// output. Data is the stored event body as is; Amounts and Postings are
// derived from the decoded domain event.
type eventView struct {
	Stream      string          `json:"stream"`
	Version     uint64          `json:"version"`
	EventID     string          `json:"event_id"`
	RecordedAt  time.Time       `json:"recorded_at"`
	Position    string          `json:"position"`
	Type        string          `json:"type"`
	Data        json.RawMessage `json:"data"`
	Amounts     []amountView    `json:"amounts"`
	Postings    []postingView   `json:"postings"`
	Metadata    *metadataView   `json:"metadata"`
	DecodeError string          `json:"decode_error,omitempty"`

	fields []field // the decoded event, in a stable order, for text
}

type amountView struct {
	Field    string `json:"field"`
	Minor    int64  `json:"minor"`
	Decimal  string `json:"decimal"`
	Currency string `json:"currency"`
}

type postingView struct {
	Account  string `json:"account"`
	Currency string `json:"currency"`
	Minor    int64  `json:"minor"`   // debit +, credit −
	Decimal  string `json:"decimal"` // signed, e.g. "+9.41"
}

// metadataView is the event metadata the ingestion service writes
// (adapters/ingest); unknown fields are ignored.
type metadataView struct {
	Provider     string `json:"provider"`
	DedupKey     string `json:"dedup_key"`
	ProviderType string `json:"provider_type"`
	PayloadHash  string `json:"payload_hash,omitempty"`
}

type field struct{ name, value string }

func viewOf(r eventstore.RecordedEvent) eventView {
	v := eventView{
		Stream:     r.StreamID,
		Version:    r.Version,
		EventID:    r.ID.String(),
		RecordedAt: r.RecordedAt.UTC(),
		Position:   r.Position.String(),
		Type:       r.Type,
		Data:       rawJSON(r.Data),
		Amounts:    []amountView{},
		Postings:   []postingView{},
	}
	if len(r.Metadata) > 0 {
		var m metadataView
		if err := json.Unmarshal(r.Metadata, &m); err == nil {
			v.Metadata = &m
		}
	}
	// The calendar's stream holds period events, decoded by their own codec.
	if r.StreamID == period.StreamID || period.IsEventType(r.Type) {
		pe, err := period.Decode(r.Type, r.Data)
		if err != nil {
			v.DecodeError = err.Error()
			return v
		}
		v.fields = describePeriod(pe)
		return v
	}
	if assertion.IsStream(r.StreamID) {
		return describeAssertion(v, r) // inspect_assertion.go
	}
	e, err := payment.Decode(r.Type, r.Data)
	if err != nil {
		v.DecodeError = err.Error()
		return v
	}
	v.fields, v.Amounts = describe(e)
	for _, p := range payment.Postings(e) {
		v.Postings = append(v.Postings, postingView{
			Account:  p.Account,
			Currency: string(p.Currency),
			Minor:    p.Amount,
			Decimal:  signed(money.FormatMinor(p.Amount, p.Currency)),
		})
	}
	return v
}

// rawJSON keeps valid JSON as is and quotes anything else, so that --json
// output stays valid whatever was stored.
func rawJSON(b []byte) json.RawMessage {
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	q, _ := json.Marshal(string(b))
	return q
}

func signed(decimal string) string {
	if strings.HasPrefix(decimal, "-") {
		return decimal
	}
	return "+" + decimal
}

// describe lists the decoded event's fields, metadata first, and its amounts
// (minor units and decimal). An explicit switch rather than reflection: the
// output names the stored field names, and a new event type shows up here as
// a missing case in review rather than as a silent guess.
func describe(e payment.Event) ([]field, []amountView) {
	m := e.Metadata()
	fs := []field{
		{"provider", m.Provider},
		{"payment_key", m.PaymentKey},
		{"dedup_key", m.DedupKey},
		{"occurred_at", m.OccurredAt.UTC().Format(time.RFC3339Nano)},
	}
	var amounts []amountView
	str := func(name, value string) { fs = append(fs, field{name, value}) }
	amount := func(name string, a int64, c money.Currency) {
		d := money.FormatMinor(a, c)
		fs = append(fs, field{name, fmt.Sprintf("%d (%s %s)", a, d, c)})
		amounts = append(amounts, amountView{Field: name, Minor: a, Decimal: d, Currency: string(c)})
	}
	switch e := e.(type) {
	case payment.Authorized:
		str("authorization_id", e.AuthorizationID)
		amount("amount", e.Amount, e.Currency)
	case payment.Captured:
		str("capture_id", e.CaptureID)
		amount("amount", e.Amount, e.Currency)
		amount("fee", e.Fee, e.Currency)
	case payment.Failed:
		str("reason", e.Reason)
	case payment.Canceled:
		str("reason", e.Reason)
	case payment.RefundPending:
		str("refund_id", e.RefundID)
		amount("amount", e.Amount, e.Currency)
	case payment.RefundPosted:
		str("refund_id", e.RefundID)
		amount("amount", e.Amount, e.Currency)
		str("was_pending", strconv.FormatBool(e.WasPending))
	case payment.RefundReversed:
		str("refund_id", e.RefundID)
		amount("amount", e.Amount, e.Currency)
		str("was_pending", strconv.FormatBool(e.WasPending))
	case payment.DisputeOpened:
		str("dispute_id", e.DisputeID)
		amount("amount", e.Amount, e.Currency)
	case payment.DisputeWon:
		str("dispute_id", e.DisputeID)
		amount("amount", e.Amount, e.Currency)
	case payment.DisputeLost:
		str("dispute_id", e.DisputeID)
		amount("amount", e.Amount, e.Currency)
		if e.ReversesWin {
			str("reverses_win", "true")
		}
	case payment.FeeRecorded:
		str("capture_id", e.CaptureID)
		amount("fee", e.Fee, e.Currency)
	case payment.CaptureReduced:
		str("capture_id", e.CaptureID)
		amount("amount", e.Amount, e.Currency)
		str("line_id", e.LineID)
	case payment.PayoutPaid:
		str("payout_id", e.PayoutID)
		amount("amount", e.Amount, e.Currency)
	case payment.Flagged:
		str("kind", e.Kind)
		str("key", e.Key)
		str("details", e.Details)
	case payment.Cleared:
		str("kind", e.Kind)
		str("key", e.Key)
		str("details", e.Details)
	case payment.Resolved:
		str("kind", e.Kind)
		str("key", e.Key)
		str("actor", e.Actor)
		str("note", e.Note)
	case payment.Reopened:
		str("kind", e.Kind)
		str("key", e.Key)
		str("actor", e.Actor)
		str("note", e.Note)
	}
	if amounts == nil {
		amounts = []amountView{}
	}
	return fs, amounts
}

// describePeriod lists a close's or reopen's fields, by their stored names.
func describePeriod(e period.Event) []field {
	switch e := e.(type) {
	case period.Closed:
		return []field{{"period", e.Period.String()}, {"zone", e.Zone}, {"actor", e.Actor}, {"note", e.Note},
			{"at", e.At.UTC().Format(time.RFC3339Nano)}}
	case period.Reopened:
		return []field{{"period", e.Period.String()}, {"actor", e.Actor}, {"reason", e.Reason},
			{"at", e.At.UTC().Format(time.RFC3339Nano)}}
	}
	return nil
}

func writeText(w io.Writer, stream string, views []eventView) error {
	plural := "s"
	if len(views) == 1 {
		plural = ""
	}
	if _, err := fmt.Fprintf(w, "stream %s: %d event%s\n", stream, len(views), plural); err != nil {
		return err
	}
	for _, v := range views {
		fmt.Fprintf(w, "\n#%d  %s  %s\n", v.Version, v.RecordedAt.Format(time.RFC3339Nano), v.Type)
		// Two tabwriters: aligning account names with field names would push
		// every value far to the right.
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  event_id\t%s\n", v.EventID)
		fmt.Fprintf(tw, "  position\t%s\n", v.Position)
		if v.DecodeError != "" {
			fmt.Fprintf(tw, "  undecodable\t%s\n", v.DecodeError)
			fmt.Fprintf(tw, "  data\t%s\n", v.Data)
		}
		for _, f := range v.fields {
			fmt.Fprintf(tw, "  %s\t%s\n", f.name, f.value)
		}
		if m := v.Metadata; m != nil {
			fmt.Fprintf(tw, "  metadata\tprovider=%s dedup_key=%s provider_type=%s\n", m.Provider, m.DedupKey, m.ProviderType)
		} else {
			fmt.Fprintf(tw, "  metadata\t(none)\n")
		}
		if len(v.Postings) == 0 {
			fmt.Fprintf(tw, "  postings\t(none)\n")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(v.Postings) == 0 {
			continue
		}
		// Accounts left-aligned, amounts right-aligned so the decimal points line up.
		acc, amt := 0, 0
		for _, p := range v.Postings {
			acc, amt = max(acc, len(p.Account)), max(amt, len(p.Decimal))
		}
		fmt.Fprintf(w, "  postings\n")
		for _, p := range v.Postings {
			if _, err := fmt.Fprintf(w, "    %-*s  %s  %*s  (%d)\n", acc, p.Account, p.Currency, amt, p.Decimal, p.Minor); err != nil {
				return err
			}
		}
	}
	return nil
}
