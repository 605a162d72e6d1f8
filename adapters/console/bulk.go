package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// bulkCap bounds the items one bulk action acts on: each is an event of
// its own, appended in turn.
const bulkCap = 1000

// deliveryHref links a conflicting redelivery's item to its delivery, whose
// page shows what differs field by field (old, new) instead of the two
// payload hashes the item's details name. Its key is the dedup key, "@",
// and the new facts' hash (adapters/ingest's decider).
func deliveryHref(it views.ReconciliationItem) string {
	if it.Kind != payment.ReconConflictingRedelivery {
		return ""
	}
	i := strings.LastIndex(it.Key, "@")
	if i <= 0 {
		return ""
	}
	return Prefix + "/inbox/delivery?" + url.Values{"provider": {it.Provider}, "key": {it.Key[:i]}}.Encode()
}

// bulk resolves or reopens the items selected on the reconciliation page,
// or resolves every open item the page's filter matches, with one note:
// each item's action is its own event with the actor and the note. Items
// already in the wanted state are skipped (a second click, another
// operator); any other refusal stops the run and says how far it got.
func (c *consoleServer) bulk(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Recon == nil {
		c.errorPage(w, r, fmt.Errorf("resolving and reopening reconciliation items is %w", errNotConfigured), 0, "")
		return
	}
	f := r.PostForm
	note := strings.TrimSpace(f.Get("note"))
	switch {
	case note == "":
		c.errorPage(w, r, nil, http.StatusBadRequest, "A note is required: say why.")
		return
	case utf8.RuneCountInString(note) > maxNote || !utf8.ValidString(note):
		c.errorPage(w, r, nil, http.StatusBadRequest, fmt.Sprintf("The note must be UTF-8 text of at most %d characters.", maxNote))
		return
	}
	action := f.Get("action")
	var refs []ItemRef
	switch action {
	case "resolve", "reopen":
		ids := f["item"]
		if len(ids) == 0 {
			c.errorPage(w, r, nil, http.StatusBadRequest, "Select at least one item.")
			return
		}
		if len(ids) > bulkCap {
			c.errorPage(w, r, nil, http.StatusBadRequest, fmt.Sprintf("At most %d items at once.", bulkCap))
			return
		}
		for _, id := range ids {
			stream, kind, key, err := views.ParseReconciliationID(id)
			if err != nil {
				c.errorPage(w, r, nil, http.StatusBadRequest, "The form names an item that is not one: "+id)
				return
			}
			refs = append(refs, ItemRef{StreamID: stream, Kind: kind, Key: key})
		}
	case "resolve-filtered":
		flt := views.ReconciliationFilter{Status: "open", Kind: f.Get("filter_kind"), Provider: f.Get("filter_provider"), Limit: bulkCap}
		if days, err := strconv.Atoi(f.Get("filter_age")); err == nil && (days == 1 || days == 7 || days == 30) {
			flt.OpenedBefore = c.cfg.Now().Add(-time.Duration(days) * 24 * time.Hour)
		}
		err := c.cfg.Read.Reconciliation(r.Context(), flt, func(it views.ReconciliationItem) error {
			refs = append(refs, ItemRef{StreamID: it.StreamID, Kind: it.Kind, Key: it.Key})
			return nil
		})
		if err != nil {
			c.errorPage(w, r, err, 0, "")
			return
		}
		action = "resolve"
	default:
		c.errorPage(w, r, nil, http.StatusBadRequest, "The form names no action (resolve or reopen).")
		return
	}
	actor := viewerOf(r).Actor
	done, want := "bulk-resolved", "resolved"
	if action == "reopen" {
		done, want = "bulk-reopened", "open"
	}
	acted := 0
	for i, ref := range refs {
		var err error
		if action == "resolve" {
			err = c.cfg.Recon.Resolve(r.Context(), ref, actor, note)
		} else {
			err = c.cfg.Recon.Reopen(r.Context(), ref, actor, note)
		}
		switch {
		case errors.Is(err, ErrConflict):
			continue // already in the wanted state
		case err != nil:
			c.errorPage(w, r, err, 0, fmt.Sprintf("Stopped at item %d of %d (%s %s): %v. The %d before it were acted on.",
				i+1, len(refs), ref.Kind, ref.Key, err, acted))
			return
		}
		acted++
	}
	c.cfg.Logger.Info("console: bulk "+action, "actor", actor, "items", acted, "selected", len(refs))
	if acted > 0 && !c.awaitItem(r.Context(), refs[len(refs)-1], want) {
		done += "-pending"
	}
	http.Redirect(w, r, backTo(f.Get("return"), done, ""), http.StatusSeeOther)
}
