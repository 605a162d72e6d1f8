package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// PeriodActions closes and reopens accounting periods (admin), as POST
// /v1/periods/{p}/close and /reopen do: each an event with the actor and
// the note or reason.
type PeriodActions interface {
	ClosePeriod(ctx context.Context, p period.Period, actor, note string) error
	ReopenPeriod(ctx context.Context, p period.Period, actor, reason string) error
}

func (c *consoleServer) closePeriod(w http.ResponseWriter, r *http.Request) {
	c.periodAction(w, r, true)
}
func (c *consoleServer) reopenPeriod(w http.ResponseWriter, r *http.Request) {
	c.periodAction(w, r, false)
}

// periodAction closes or reopens the form's period, then waits (bounded)
// for the periods read model to show it, as reconAction does for items: the
// page that confirms the action shows the period in its new state.
func (c *consoleServer) periodAction(w http.ResponseWriter, r *http.Request, closing bool) {
	if c.cfg.PeriodActions == nil || c.cfg.Periods == nil {
		c.errorPage(w, r, fmt.Errorf("closing and reopening periods is %w", errNotConfigured), 0, "")
		return
	}
	p, err := period.Parse(r.PostForm.Get("period"))
	if err != nil {
		c.errorPage(w, r, nil, http.StatusBadRequest, "The form names no period (YYYY-MM).")
		return
	}
	text := strings.TrimSpace(r.PostForm.Get("note"))
	switch {
	case !closing && text == "":
		c.errorPage(w, r, nil, http.StatusBadRequest, "A reason is required to reopen a period: say why.")
		return
	case utf8.RuneCountInString(text) > maxNote || !utf8.ValidString(text):
		c.errorPage(w, r, nil, http.StatusBadRequest, fmt.Sprintf("The note must be UTF-8 text of at most %d characters.", maxNote))
		return
	}
	actor := viewerOf(r).Actor
	done, want := "period-closed", views.PeriodClosed
	if closing {
		err = c.cfg.PeriodActions.ClosePeriod(r.Context(), p, actor, text)
	} else {
		done, want = "period-reopened", views.PeriodOpen
		err = c.cfg.PeriodActions.ReopenPeriod(r.Context(), p, actor, text)
	}
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.cfg.Logger.Info("console: "+done, "actor", actor, "period", p.String())
	if !c.awaitPeriod(r.Context(), p, want) {
		done += "-pending"
	}
	q := url.Values{"done": {done}}
	http.Redirect(w, r, Prefix+"/periods?"+q.Encode()+"#period-"+p.String(), http.StatusSeeOther)
}

// awaitPeriod waits until the periods read model shows p in status want.
func (c *consoleServer) awaitPeriod(ctx context.Context, p period.Period, want string) bool {
	return awaitShown(ctx, func(ctx context.Context) bool { // awaitaction.go
		infos, err := c.cfg.Periods.Periods(ctx)
		return err == nil && slices.ContainsFunc(infos, func(pi views.PeriodInfo) bool {
			return pi.Period == p && pi.Status == want
		})
	})
}
