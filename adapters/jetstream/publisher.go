// Package jetstream publishes the outbound business events to NATS
// JetStream (docs/events.md, "NATS JetStream"): each event on
// PREFIX.<type> with the header Nats-Msg-Id set to the event's id, so that
// JetStream's duplicate window drops a re-publish. It owns the connection
// (credentials, TLS through a tls:// URL), the stream check at start-up
// and the wait for every publish acknowledgement; what to publish and when
// to advance is the relay's (outbound.Relay).
package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/projections/outbound"
)

// Config is the ONCELEDGER_OUTBOX_NATS_URL, _SUBJECT, _STREAM and _CREDS variables (docs/reference.md).
type Config struct {
	URL     string // nats://host:4222, or tls://… for TLS
	Subject string // the subject prefix; default DefaultSubject
	Stream  string // the stream created when none covers PREFIX.>; default DefaultStream
	Creds   string // a credentials file; "" = none
}

// Defaults of Config.
const (
	DefaultSubject = "onceledger.events"
	DefaultStream  = "ONCELEDGER"
	// MinDuplicateWindow: a crash re-publishes at most the batch after the
	// checkpoint, within seconds; a shorter window than this may let a
	// re-publish through, so start-up warns.
	MinDuplicateWindow = time.Minute
)

// Publisher publishes events and waits for their acknowledgements.
type Publisher struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
	Stream  string // the stream that covers the subjects
}

var _ outbound.Publisher = (*Publisher)(nil)

// Dial connects, finds the stream covering PREFIX.> or creates one, and
// warns (through log) when that stream's duplicate window is under
// MinDuplicateWindow.
func Dial(ctx context.Context, cfg Config, log *slog.Logger) (*Publisher, error) {
	if cfg.Subject == "" {
		cfg.Subject = DefaultSubject
	}
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	opts := []nats.Option{nats.Name("onceledger"), nats.MaxReconnects(-1)}
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		// Neither the URL's user info nor a quote of it in the client's
		// error may reach the start error (issue 33).
		return nil, &connectError{msg: fmt.Sprintf("jetstream: connect %s: %s", RedactURL(cfg.URL), scrub(err.Error(), cfg.URL)), err: err}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	p := &Publisher{nc: nc, js: js, subject: cfg.Subject}
	if err := p.ensureStream(ctx, cfg.Stream, log); err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

// ensureStream uses the stream that already covers PREFIX.> (whoever made
// it, with whatever replicas and limits) or creates cfg's.
func (p *Publisher) ensureStream(ctx context.Context, name string, log *slog.Logger) error {
	all := p.subject + ".>"
	found, err := p.js.StreamNameBySubject(ctx, all)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		_, err = p.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{all}, Duplicates: 2 * time.Minute})
		if err != nil {
			return fmt.Errorf("jetstream: create stream %s over %s: %w", name, all, err)
		}
		p.Stream = name
		return nil
	case err != nil:
		return fmt.Errorf("jetstream: find the stream over %s: %w", all, err)
	}
	s, err := p.js.Stream(ctx, found)
	if err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", found, err)
	}
	p.Stream = found
	if w := s.CachedInfo().Config.Duplicates; w < MinDuplicateWindow {
		log.Warn("the JetStream stream's duplicate window is shorter than a minute: a re-publish after a crash may be stored twice",
			"stream", found, "duplicate_window", w.String())
	}
	return nil
}

// Subject is where an event of type typ is published.
func (p *Publisher) Subject(typ string) string { return p.subject + "." + typ }

// Publish publishes evs in order and returns once JetStream acknowledged
// every one (a duplicate's acknowledgement counts: it is stored already).
func (p *Publisher) Publish(ctx context.Context, evs []outbound.Event) error {
	futures := make([]jetstream.PubAckFuture, 0, len(evs))
	for _, e := range evs {
		body, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("jetstream: encode %s: %w", e.ID, err)
		}
		m := nats.NewMsg(p.Subject(e.Type))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, e.ID.String())
		f, err := p.js.PublishMsgAsync(m)
		if err != nil {
			return fmt.Errorf("jetstream: publish %s: %w", e.ID, err)
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("jetstream: publish %s: %w", f.Msg().Header.Get(jetstream.MsgIDHeader), err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close drains nothing: unacknowledged publishes are re-published from the
// checkpoint next time.
func (p *Publisher) Close() { p.nc.Close() }
