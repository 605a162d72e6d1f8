package esdb

import (
	"context"
	"time"

	esdbclient "github.com/EventStore/EventStore-Client-Go/v4/esdb"
)

// Resubscription backoff after a dropped subscription.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// filter is the server-side subscription filter for the feed's streams.
func (s *Store) filter() *esdbclient.SubscriptionFilter {
	if len(s.prefixes) == 0 {
		return esdbclient.ExcludeSystemEventsFilter()
	}
	return &esdbclient.SubscriptionFilter{Type: esdbclient.StreamFilterType, Prefixes: s.prefixes}
}

func (s *Store) subscribe(ctx context.Context, from esdbclient.AllPosition) (*esdbclient.Subscription, error) {
	filter := s.filter()
	return do(ctx, s, func(callCtx context.Context, c *esdbclient.Client) (*esdbclient.Subscription, error) {
		// The subscription outlives the call: it lives in ctx, the
		// listener's context, not in the call's.
		sub, err := c.SubscribeToAll(ctx, esdbclient.SubscribeToAllOptions{From: from, Filter: filter})
		if err == nil && callCtx.Err() != nil {
			_ = sub.Close() // made after the caller gave up on it
			return nil, callCtx.Err()
		}
		return sub, err
	})
}

// Changes subscribes to $all from the end, filtered to the feed's streams,
// and sends a coalesced wake-up for every feed event that appears. A dropped
// subscription is resumed from the last position seen, with backoff; every
// resubscription also sends a wake-up, since events may have been missed
// while it was down. The channel is closed when ctx ends.
//
// The first subscription is made before Changes returns, so an append that
// completes after Changes returns is always signalled.
func (s *Store) Changes(ctx context.Context) (<-chan struct{}, error) {
	sub, err := s.subscribe(ctx, esdbclient.End{})
	if err != nil {
		return nil, classify(ctx, "subscribe to $all", err)
	}
	ch := make(chan struct{}, 1)
	go s.follow(ctx, sub, ch)
	return ch, nil
}

func (s *Store) follow(ctx context.Context, sub *esdbclient.Subscription, ch chan struct{}) {
	defer close(ch)
	signal := func() {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
	var last esdbclient.AllPosition = esdbclient.End{}
	backoff := minBackoff
	for {
		if sub != nil {
			for dropped := false; !dropped; {
				ev := sub.Recv()
				switch {
				case ev.EventAppeared != nil:
					if r := ev.EventAppeared.OriginalEvent(); r != nil {
						last = r.Position
						if s.inFeed(r) {
							signal()
						}
					}
					backoff = minBackoff
				case ev.CheckPointReached != nil:
					last = *ev.CheckPointReached
				case ev.SubscriptionDropped != nil:
					dropped = true
				}
			}
			_ = sub.Close()
			sub = nil
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff *= 2; backoff > maxBackoff {
			backoff = maxBackoff
		}
		next, err := s.subscribe(ctx, last)
		if err != nil {
			continue
		}
		sub = next
		signal()
	}
}
