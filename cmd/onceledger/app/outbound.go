package app

import (
	"context"
	"sync"

	"github.com/onceledger/onceledger/adapters/jetstream"
	"github.com/onceledger/onceledger/adapters/postgres"
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
		if err := relay.Run(ctx); err != nil {
			a.log.Error("outbound relay stopped", "error", err)
		}
	})
	return nil
}
