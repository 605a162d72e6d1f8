package operations

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
)

// act runs one operator's command on stream by the write protocol of every
// writer (command.Act): the history decoded with decode, the decision
// encoded with encode, appended at the version decided on, decided again
// on the new history after a lost race, at most maxAttempts times. It
// returns the decided events.
//
// Each event gets a fresh id: two operators issuing the same command at the
// same version must conflict (the loser decides again and is told, say,
// that the period is closed already), not both be acknowledged as the one
// recorded event, as deterministic ids would make them.
func act[E any](ctx context.Context, store EventStore, stream string,
	decode func(typ string, data []byte) (E, error), encode func(E) (string, []byte, error),
	decide func(history []E) ([]E, error)) ([]E, error) {
	var decided []E
	_, err := command.Act(ctx, command.Versioned(store), stream, func(recs []eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		history, err := command.Decode(recs, decode)
		if err != nil {
			return nil, err
		}
		if decided, err = decide(history); err != nil {
			return nil, err
		}
		data := make([]eventstore.EventData, len(decided))
		for i, e := range decided {
			typ, body, err := encode(e)
			if err != nil {
				return nil, err
			}
			data[i] = eventstore.EventData{ID: uuid.New(), Type: typ, Data: body}
		}
		return data, nil
	}, command.Retry{Attempts: maxAttempts, GiveUp: func(_ int, err error) error {
		return fmt.Errorf("%w: %v", ErrContention, err)
	}})
	if err != nil {
		return nil, err
	}
	return decided, nil
}
