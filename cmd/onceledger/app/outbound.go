package app

import (
	"context"
	"sync"
	"time"

	"github.com/onceledger/onceledger/adapters/jetstream"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/outbound"
)

// natsRelay is the name of the JetStream relay's checkpoint row.
const natsRelay = "nats"

// startNATS connects to JetStream (ONCELEDGER_OUTBOX_NATS_URL: refusing to
// start when it cannot, rather than silently publishing nothing) and runs
// the relay that publishes the committed feed from its checkpoint until
// ctx ends.
func (a *App) startNATS(ctx context.Context, wg *sync.WaitGroup) error {
	pub, err := jetstream.Dial(ctx, a.cfg.NATS, a.log)
	if err != nil {
		return err
	}
	relay := &outbound.Relay{Feed: a.outbound, Publisher: pub,
		Checkpoint: postgres.NewOutboundCheckpoint(a.pool, natsRelay), Log: a.log}
	a.log.Info("publishing outbound events to NATS JetStream", "stream", pub.Stream, "subject", a.cfg.NATS.Subject+".<type>")
	wg.Go(func() {
		defer pub.Close()
		for ctx.Err() == nil {
			a.relayWhileActive(ctx, relay)
		}
	})
	return nil
}

// relayWhileActive runs relay while this process holds the relay's
// advisory lock: one active publisher across instances (the others wait
// for the lock and take over), as for the projectors.
func (a *App) relayWhileActive(ctx context.Context, relay *outbound.Relay) {
	lock, err := readmodel.New(a.rmPool).Lock(ctx, projections.LockActive, "outbound-"+natsRelay)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("outbound relay: lock", "error", err)
			sleepCtx(ctx, 5*time.Second)
		}
		return
	}
	defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for rctx.Err() == nil {
			sleepCtx(rctx, 5*time.Second)
			if rctx.Err() == nil && lock.Alive(rctx) != nil {
				cancel() // the lock's connection is gone: another may take over
			}
		}
	}()
	if err := relay.Run(rctx); err != nil {
		a.log.Error("outbound relay stopped", "error", err)
		sleepCtx(ctx, 5*time.Second)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
