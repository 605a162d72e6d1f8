package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/period"
)

// TestPeriodCommands closes and reopens periods through the commands as
// main runs them, then inspects the periods stream: the events decode with
// the period codec and carry the actor, the note and the reason.
func TestPeriodCommands(t *testing.T) {
	url := pgtest.NewDatabase(t)
	g := &globals{
		ctx: context.Background(),
		log: slog.New(slog.DiscardHandler),
		cli: &cli{DatabaseURL: url, EventStore: "postgres", ReportingTZ: "Europe/Berlin"},
	}
	require.NoError(t, (&periodCloseCmd{Period: "2025-10", Note: "October done", actorFlag: actorFlag{Actor: "alice"}}).Run(g))
	require.NoError(t, (&periodCloseCmd{Period: "2025-11"}).Run(g), "the actor defaults to the OS user")

	err := (&periodCloseCmd{Period: "2025-11"}).Run(g)
	require.ErrorIs(t, err, period.ErrAlreadyClosed)
	err = (&periodCloseCmd{Period: "2025-13"}).Run(g)
	require.ErrorIs(t, err, period.ErrInvalidPeriod)
	err = (&periodReopenCmd{Period: "2025-10", Reason: "x"}).Run(g)
	require.ErrorIs(t, err, period.ErrLaterPeriodClosed)
	assert.EqualError(t, err, "reopen 2025-10: only the last closed period can be reopened: 2025-10 is closed, but the last closed period is 2025-11 (reopen it first)")
	err = (&periodReopenCmd{Period: "2025-09", Reason: "x"}).Run(g)
	assert.EqualError(t, err, "reopen 2025-09: only the last closed period can be reopened: 2025-09 is before the start of the books (2025-10) and stays closed; the last closed period is 2025-11")
	err = (&periodReopenCmd{Period: "2025-11", Reason: " "}).Run(g)
	require.ErrorIs(t, err, period.ErrReasonRequired)
	require.NoError(t, (&periodReopenCmd{Period: "2025-11", Reason: "late invoice", actorFlag: actorFlag{Actor: "bob"}}).Run(g))

	g.cli.ReportingTZ = "UTC"
	err = (&periodCloseCmd{Period: "2025-11"}).Run(g)
	require.ErrorIs(t, err, period.ErrZoneMismatch, "the books keep the zone of their first close")

	pool, err := openPool(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var out bytes.Buffer
	require.NoError(t, inspect(context.Background(), postgres.NewEventStore(pool), period.StreamID, false, &out))
	text := out.String()
	t.Log("\n" + text)
	assert.True(t, strings.HasPrefix(text, "stream periods: 3 events\n"), "header")
	assert.NotContains(t, text, "undecodable")
	assert.Regexp(t, `#0  \S+  period\.closed\n(.*\n)*  period +2025-10\n  zone +Europe/Berlin\n  actor +alice\n  note +October done\n`, text)
	assert.Regexp(t, `#2  \S+  period\.reopened\n(.*\n)*  period +2025-11\n  actor +bob\n  reason +late invoice\n`, text)
}

func TestReportingZoneRefused(t *testing.T) {
	c := &cli{ReportingTZ: "Mars/Olympus_Mons", BankArrivalDays: 5}
	err := c.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ONCELEDGER_REPORTING_TZ")
	c.ReportingTZ = "Pacific/Auckland"
	require.NoError(t, c.Validate())
}
