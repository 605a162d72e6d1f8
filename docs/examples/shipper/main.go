// Command shipper is an example consumer of onceledger's outbound webhooks:
// a shop's fulfilment service that ships each captured payment once,
// however often the provider delivered the webhook and however often
// onceledger delivers the event (delivery is at least once).
//
// It verifies each POST per the Standard Webhooks spec (webhook-id,
// webhook-timestamp, webhook-signature; the subscription's whsec_ secret;
// the timestamp within five minutes of now), then, in ONE Postgres
// transaction,
//
//  1. records the webhook-id under a UNIQUE key (table webhook_receipts):
//     a second delivery of the same id finds it there and ships nothing;
//  2. for a payment.captured, inserts the order's shipment (table
//     shipments, UNIQUE per provider and payment): the shipping itself, or
//     the job that will do it, commits with the receipt or not at all;
//
// and answers 2xx only after that transaction committed. A crash before the
// commit leaves nothing behind, and onceledger retries; a crash after it
// loses only the answer, and the retry is a duplicate. Never keep the seen
// ids in memory: they would be gone after a restart and not shared between
// two instances of the service.
//
// Configuration (environment):
//
//	SHIPPER_ADDR            listen address (default 127.0.0.1:8090)
//	SHIPPER_DATABASE_URL    the shop's own Postgres (required)
//	SHIPPER_WEBHOOK_SECRETS comma-separated whsec_… secrets of the subscription
//	                        (`onceledger subscriptions add` prints it once)
//
// Subscribe it with
//
//	onceledger subscriptions add https://shop.example/onceledger --type payment.captured
//
// See docs/examples/README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// schema is the shipper's own tables, created at start-up when missing.
const schema = `
CREATE TABLE IF NOT EXISTS webhook_receipts (
    webhook_id  text PRIMARY KEY,             -- onceledger's event id: the dedup key
    event_type  text NOT NULL,
    provider    text NOT NULL DEFAULT '',
    payment_id  text NOT NULL DEFAULT '',
    seq         bigserial,                    -- the order the receipts committed in
    received_at timestamptz NOT NULL DEFAULT now(),
    deliveries  integer NOT NULL DEFAULT 1    -- 1 + the redeliveries received since
);
CREATE TABLE IF NOT EXISTS shipments (
    provider   text NOT NULL,
    payment_id text NOT NULL,
    event_id   text NOT NULL REFERENCES webhook_receipts (webhook_id),
    amount     bigint NOT NULL,
    currency   text NOT NULL,
    shipped_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, payment_id)             -- one shipment per order
);`

// event is the part of onceledger's outbound event the shipper reads
// (docs/events.md).
type event struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Provider  string `json:"provider"`
	PaymentID string `json:"payment_id"`
	Data      struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	} `json:"data"`
}

// shipper is the webhook handler.
type shipper struct {
	db       *pgxpool.Pool
	verifier []*standardwebhooks.Webhook
	log      *slog.Logger
}

// maxBody bounds what is read from a request.
const maxBody = 1 << 20

func (s *shipper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if !s.verified(body, r.Header) {
		// Not from onceledger (or a stale timestamp: a replayed capture of
		// an old request). Nothing is recorded.
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var e event
	if err := json.Unmarshal(body, &e); err != nil || e.Type == "" {
		http.Error(w, "not an onceledger event", http.StatusBadRequest)
		return
	}
	// webhook-id is the event id, the same on every attempt and replay.
	id := r.Header.Get("webhook-id")
	first, err := s.receive(r.Context(), id, e)
	if err != nil {
		// Not committed: a non-2xx makes onceledger retry later.
		s.log.Error("receive", "webhook_id", id, "err", err)
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	s.log.Info("received", "webhook_id", id, "type", e.Type, "payment", e.PaymentID, "first", first)
	w.WriteHeader(http.StatusNoContent)
}

// verified checks the signature and timestamp against each configured
// secret (several while the shop moves to a rotated one; onceledger itself
// signs with both old and new for 24 hours after a rotation).
func (s *shipper) verified(body []byte, h http.Header) bool {
	for _, v := range s.verifier {
		if v.Verify(body, h) == nil {
			return true
		}
	}
	return false
}

// receive records the delivery and ships in one transaction; first reports
// whether this was the first delivery of the id.
func (s *shipper) receive(ctx context.Context, id string, e event) (first bool, err error) {
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		// The UNIQUE key decides: a concurrent twin of this delivery waits on
		// the row lock until this transaction ends, then counts as a
		// redelivery.
		var deliveries int
		if err := tx.QueryRow(ctx, `
			INSERT INTO webhook_receipts (webhook_id, event_type, provider, payment_id)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (webhook_id) DO UPDATE SET deliveries = webhook_receipts.deliveries + 1
			RETURNING deliveries`, id, e.Type, e.Provider, e.PaymentID).Scan(&deliveries); err != nil {
			return fmt.Errorf("record receipt: %w", err)
		}
		first = deliveries == 1
		if !first || e.Type != "payment.captured" {
			return nil
		}
		return ship(ctx, tx, id, e)
	})
	return first, err
}

// ship is the business action: here one row per order. A real shop would
// insert its fulfilment job here, in the same transaction.
func ship(ctx context.Context, tx pgx.Tx, id string, e event) error {
	tag, err := tx.Exec(ctx, `
		INSERT INTO shipments (provider, payment_id, event_id, amount, currency)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (provider, payment_id) DO NOTHING`,
		e.Provider, e.PaymentID, id, e.Data.Amount, e.Data.Currency)
	if err != nil {
		return fmt.Errorf("ship: %w", err)
	}
	if tag.RowsAffected() == 0 {
		// A second capture of an order already shipped (a partial capture,
		// say): the order ships once.
		slog.Warn("order already shipped", "provider", e.Provider, "payment", e.PaymentID, "event", id)
	}
	return nil
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("shipper", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dbURL := os.Getenv("SHIPPER_DATABASE_URL")
	if dbURL == "" {
		return errors.New("SHIPPER_DATABASE_URL is required")
	}
	var verifiers []*standardwebhooks.Webhook
	for _, secret := range strings.Split(os.Getenv("SHIPPER_WEBHOOK_SECRETS"), ",") {
		if secret = strings.TrimSpace(secret); secret == "" {
			continue
		}
		v, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return fmt.Errorf("SHIPPER_WEBHOOK_SECRETS: %w", err)
		}
		verifiers = append(verifiers, v)
	}
	if len(verifiers) == 0 {
		return errors.New("SHIPPER_WEBHOOK_SECRETS is required")
	}
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(ctx, schema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	addr := os.Getenv("SHIPPER_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8090"
	}
	srv := &http.Server{Addr: addr, Handler: &shipper{db: db, verifier: verifiers, log: log},
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("shipper listening", "addr", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
