package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ListenerApplicationName marks the LISTEN connections in pg_stat_activity.
const ListenerApplicationName = "onceledger-listener"

const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// Changes returns a channel that receives a wake-up after appends commit,
// until ctx ends; then the channel is closed. Wake-ups are coalesced (the
// channel holds at most one) and are hints: a reader still reads the feed
// from its checkpoint and polls now and then, because a notification can be
// lost while the listener reconnects (it sends a wake-up after reconnecting
// for that reason), and because an event becomes readable only once older
// transactions end (see EventStore), which nobody notifies.
//
// The listener uses its own connection, outside the pool, since LISTEN is
// session state and the connection sits blocked waiting. The first LISTEN
// happens before Changes returns, so an append committed after that is
// signalled; its failure is returned (matching eventstore.ErrUnavailable).
// Later connection losses are retried with backoff.
func (s *EventStore) Changes(ctx context.Context) (<-chan struct{}, error) {
	conn, err := s.listen(ctx)
	if err != nil {
		return nil, wrap("listen", err)
	}
	ch := make(chan struct{}, 1)
	go s.watch(ctx, conn, ch)
	return ch, nil
}

func (s *EventStore) listen(ctx context.Context) (*pgx.Conn, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = ListenerApplicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{NotifyChannel}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}

func (s *EventStore) watch(ctx context.Context, conn *pgx.Conn, ch chan<- struct{}) {
	defer close(ch)
	backoff := listenBackoffMin
	for {
		if conn == nil {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			c, err := s.listen(ctx)
			if err != nil {
				backoff = min(backoff*2, listenBackoffMax)
				continue
			}
			conn, backoff = c, listenBackoffMin
			wake(ch) // notifications sent while disconnected are lost
		}
		if _, err := conn.WaitForNotification(ctx); err != nil {
			closeConn(conn)
			conn = nil
			if ctx.Err() != nil {
				return
			}
			continue
		}
		wake(ch)
	}
}

// wake sends a wake-up unless one is already pending.
func wake(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
