package command_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
)

// racyStore is one stream in memory whose appends lose the race while
// rivals is positive: each lost race lets a rival's event in first.
type racyStore struct {
	events []eventstore.RecordedEvent
	rivals int
	reads  int
}

func (s *racyStore) ReadStream(_ context.Context, stream string) ([]eventstore.RecordedEvent, error) {
	s.reads++
	return append([]eventstore.RecordedEvent(nil), s.events...), nil
}

func (s *racyStore) Append(_ context.Context, stream string, read int, events []eventstore.EventData) error {
	if s.rivals > 0 {
		s.rivals--
		s.push(stream, eventstore.EventData{ID: uuid.New(), Type: "rival"})
	}
	if read != len(s.events) {
		return &eventstore.WrongVersionError{Stream: stream, Expected: eventstore.ExpectFor(read), Actual: int64(len(s.events)) - 1}
	}
	for _, e := range events {
		s.push(stream, e)
	}
	return nil
}

func (s *racyStore) push(stream string, e eventstore.EventData) {
	s.events = append(s.events, eventstore.RecordedEvent{ID: e.ID, StreamID: stream, Version: uint64(len(s.events)), Type: e.Type})
}

// once decides one "mine" event on any history, counting its calls.
func once(calls *int) command.Decision {
	return func(h []eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		*calls++
		return []eventstore.EventData{{ID: uuid.New(), Type: fmt.Sprintf("mine@%d", len(h))}}, nil
	}
}

func TestActDecidesAgainOnTheNewHistory(t *testing.T) {
	s := &racyStore{rivals: 2}
	calls, pauses := 0, 0
	n, err := command.Act(context.Background(), s, "x", once(&calls), command.Retry{Attempts: 3,
		Pause: func(context.Context, int) error { pauses++; return nil }})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, 3, calls, "decided once per attempt")
	assert.Equal(t, 2, pauses, "paused after each lost race")
	require.Len(t, s.events, 3)
	assert.Equal(t, "mine@2", s.events[2].Type, "decided on the history the rivals left")
}

func TestActGivesUpAfterItsAttempts(t *testing.T) {
	s := &racyStore{rivals: 5}
	calls := 0
	giveUp := errors.New("gave up")
	_, err := command.Act(context.Background(), s, "x", once(&calls), command.Retry{Attempts: 2,
		GiveUp: func(attempts int, err error) error {
			assert.Equal(t, 2, attempts)
			assert.ErrorIs(t, err, eventstore.ErrWrongVersion)
			return giveUp
		}})
	require.ErrorIs(t, err, giveUp)
	assert.Equal(t, 2, calls)

	// The zero Retry tries once and returns the lost race as it is.
	_, err = command.Act(context.Background(), &racyStore{rivals: 1}, "x", once(&calls), command.Retry{})
	require.ErrorIs(t, err, eventstore.ErrWrongVersion)
}

func TestActOnDecidesFirstOnTheHistoryGiven(t *testing.T) {
	s := &racyStore{rivals: 1}
	calls := 0
	n, err := command.ActOn(context.Background(), s, "x", nil, once(&calls), command.Retry{Attempts: 2})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, s.reads, "read only after the lost race")
	assert.Equal(t, "mine@1", s.events[1].Type)
}

func TestActEndsOnAnyOtherError(t *testing.T) {
	// A decision's error is final even when it matches a lost race: only
	// the append can lose one.
	s := &racyStore{}
	calls := 0
	_, err := command.Act(context.Background(), s, "x", func([]eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		calls++
		return nil, fmt.Errorf("odd: %w", eventstore.ErrWrongVersion)
	}, command.Retry{Attempts: 5})
	require.ErrorIs(t, err, eventstore.ErrWrongVersion)
	assert.Equal(t, 1, calls)

	// An empty decision appends nothing.
	n, err := command.Act(context.Background(), s, "x", func([]eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		return nil, nil
	}, command.Retry{})
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Empty(t, s.events)
}

func TestRetryRunStopsAtThePausesError(t *testing.T) {
	stop := errors.New("deadline")
	runs := 0
	err := command.Retry{Attempts: 5, Pause: func(context.Context, int) error { return stop }}.Run(context.Background(), func(int) error {
		runs++
		return eventstore.ErrWrongVersion
	})
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 1, runs)
}

func TestDecodeNamesTheEventThatDoesNotDecode(t *testing.T) {
	history := []eventstore.RecordedEvent{{StreamID: "s", Version: 0, Type: "a"}, {StreamID: "s", Version: 1, Type: "b"}}
	bad := errors.New("unknown")
	_, err := command.Decode(history, func(typ string, _ []byte) (string, error) {
		if typ == "b" {
			return "", bad
		}
		return typ, nil
	})
	require.ErrorIs(t, err, bad)
	assert.ErrorContains(t, err, "decode s/1")
	got, err := command.Decode(history[:1], func(typ string, _ []byte) (string, error) { return typ, nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, got)
}
