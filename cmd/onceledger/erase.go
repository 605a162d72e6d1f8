package main

import (
	"fmt"
	"os/user"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
)

// eraseCmd removes stored raw bodies (personal data) on request; the
// payload hashes, the normalized facts and the events stay. The erasure is
// recorded in raw_erasures with the actor.
type eraseCmd struct {
	Provider string `name:"provider" help:"Provider of the delivery (with --dedup-key)."`
	DedupKey string `name:"dedup-key" help:"Dedup key of the delivery whose raw body to erase."`
	Payment  string `name:"payment" help:"PROVIDER/PAYMENT_ID: erase the raw bodies of every delivery of this payment."`
	Actor    string `name:"actor" help:"Who asks, for the audit record (default: the operating-system user)."`
}

func (c *eraseCmd) Validate() error {
	_, err := c.erasure()
	return err
}

func (c *eraseCmd) erasure() (ingest.Erasure, error) {
	e := ingest.Erasure{Provider: c.Provider, DedupKey: c.DedupKey, Actor: c.Actor, Reason: ingest.ErasureRequest}
	switch {
	case c.Payment != "" && (c.Provider != "" || c.DedupKey != ""):
		return e, fmt.Errorf("%w: --payment excludes --provider and --dedup-key", ingest.ErrBadErasure)
	case c.Payment != "":
		p, id, err := ingest.ParsePayment(c.Payment)
		if err != nil {
			return e, err
		}
		e.Provider, e.PaymentID = p, id
	case c.Provider == "" || c.DedupKey == "":
		return e, fmt.Errorf("%w: give --provider P --dedup-key K, or --payment P/ID", ingest.ErrBadErasure)
	}
	if e.Actor == "" {
		e.Actor = "cli"
		if u, err := user.Current(); err == nil && u.Username != "" {
			e.Actor = "cli:" + u.Username
		}
	}
	return e, e.Validate()
}

func (c *eraseCmd) Run(g *globals) error {
	e, err := c.erasure()
	if err != nil {
		return err
	}
	pool, err := openPool(g.ctx, g.cli.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := postgres.NewEraser(pool).Erase(g.ctx, e)
	if err != nil {
		return err
	}
	fmt.Printf("erased raw bodies of %s: %d inbox rows, %d conflicting payloads (hashes, facts and events kept)\n",
		e.Selector(), n.InboxRows, n.ConflictRows)
	return nil
}
