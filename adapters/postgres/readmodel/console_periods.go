package readmodel

import (
	"context"
	"slices"
	"time"

	"github.com/onceledger/onceledger/adapters/console"
)

var _ console.PeriodReader = (*Console)(nil)

// consolePeriods bounds how many periods the console's page shows (the
// most recent): two years of monthly periods.
const consolePeriods = 24

// Periods implements console.PeriodReader over Store.Periods and
// Store.TrialBalance: the most recent periods first, each with its trial
// balance (frozen when closed) and its late adjustments.
func (c *Console) Periods(ctx context.Context) ([]console.PeriodBalance, error) {
	s := New(c.pool)
	infos, err := s.Periods(ctx)
	if err != nil {
		return nil, cwrap("periods", err)
	}
	slices.Reverse(infos)
	infos = infos[:min(len(infos), consolePeriods)]
	out := make([]console.PeriodBalance, 0, len(infos))
	for _, pi := range infos {
		tb, err := s.TrialBalance(ctx, pi.Period)
		if err != nil {
			return nil, cwrap("trial balance of "+pi.Period.String(), err)
		}
		pb := console.PeriodBalance{
			Period: pi.Period.String(), Status: tb.Info.Status, Frozen: tb.Frozen,
			ClosedAt: deref(tb.Info.ClosedAt), ClosedBy: tb.Info.ClosedBy, CloseNote: tb.Info.CloseNote,
			ReopenedBy: tb.Info.ReopenedBy, ReopenReason: tb.Info.ReopenReason,
		}
		for _, l := range tb.Lines {
			pb.Lines = append(pb.Lines, console.PeriodLine{Account: l.Account, Currency: string(l.Currency),
				Opening: l.Opening, Debits: l.Debits, Credits: l.Credits, Closing: l.Closing})
		}
		for _, a := range tb.Adjustments {
			pb.Adjustments = append(pb.Adjustments, console.PeriodAdjustment{Adjusts: a.Adjusts.String(),
				Account: a.Account, Currency: string(a.Currency), Amount: a.Amount, EventType: a.EventType,
				StreamID: a.StreamID, EffectiveAt: a.EffectiveAt, BookedAt: a.BookedAt})
		}
		out = append(out, pb)
	}
	return out, nil
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
