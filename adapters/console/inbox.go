package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/adapters/params"
	"github.com/onceledger/onceledger/projections/views"
)

// inboxStatuses are the statuses the inbox filter offers (views.InboxStatuses
// but "verified", a held delivery's short-lived state).
var inboxStatuses = []string{"received", "applied", "ignored", "unverified", "invalid", "failed"}

type inboxData struct {
	list[inboxRowView]
	Statuses []string
	Counts   []views.StatusCount
}

type inboxRowView struct {
	views.InboxRow
	Token string // the row's checkbox value
}

type inboxRef struct {
	Provider string `json:"p"`
	DedupKey string `json:"k"`
}

func inboxFilter(p *params.Params) views.InboxFilter {
	return views.InboxFilter{
		Provider: p.Text("provider"), Status: p.OneOf("status", inboxStatuses...), Type: p.Text("type"),
		From: p.Day("from", nil, false), To: p.Day("to", nil, true),
	}
}

// statusCounts counts the deliveries matching f by status.
func (c *consoleServer) statusCounts(r *http.Request, f views.InboxFilter) ([]views.StatusCount, error) {
	counts, err := c.cfg.Read.DeliveryCounts(r.Context(), f)
	return views.ByStatus(counts), err
}

func (c *consoleServer) inbox(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	f := inboxFilter(p)
	size := p.Limit(c.cfg.PageSize, maxPageSize)
	after, asCSV, err := listParams[views.InboxKey](p)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if asCSV {
		c.exportInbox(w, r, f)
		return
	}
	counts, err := c.statusCounts(r, f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	f.After, f.Limit = after, size+1
	rows, err := c.cfg.Read.Deliveries(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	rowViews := make([]inboxRowView, len(rows))
	for i, x := range rows {
		rowViews[i] = inboxRowView{InboxRow: x, Token: encodeCursor(inboxRef{Provider: x.Provider, DedupKey: x.DedupKey})}
	}
	filter := filterQuery(p.Values, "provider", "status", "type", "from", "to", "limit")
	l := newList(Prefix+"/inbox", filter, rowViews, size, func(x inboxRowView) any { return x.Key() }, after == nil)
	c.render(w, r, http.StatusOK, "inbox", "Inbox", inboxData{list: l, Statuses: inboxStatuses, Counts: counts})
}

func (c *consoleServer) exportInbox(w http.ResponseWriter, r *http.Request, f views.InboxFilter) {
	out := startCSV(w, "inbox",
		csvexport.Text("provider"), csvexport.Text("dedup_key"), csvexport.Text("event_type"), csvexport.Text("stream_id"),
		csvexport.Text("status"), csvexport.Text("delivery_count"), csvexport.Text("conflict_count"), csvexport.Text("attempts"),
		csvexport.Text("last_error"), csvexport.Text("first_seen_at"), csvexport.Text("last_seen_at"), csvexport.Text("applied_at"))
	exportPages(c, "inbox", func(after *views.InboxKey, limit int) ([]views.InboxRow, error) {
		f.After, f.Limit = after, limit
		return c.cfg.Read.Deliveries(r.Context(), f)
	}, views.InboxRow.Key, func(x views.InboxRow) {
		_ = out.Write(x.Provider, x.DedupKey, x.EventType, x.StreamID, x.Status, strconv.Itoa(x.DeliveryCount),
			strconv.Itoa(x.ConflictCount), strconv.Itoa(x.Attempts), x.LastError, rfc3339(x.FirstSeenAt),
			rfc3339(x.LastSeenAt), rfc3339(x.AppliedAt))
	})
	_ = out.Flush()
}

func (c *consoleServer) delivery(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	provider, key := p.Get("provider"), p.Get("key")
	if provider == "" || key == "" {
		c.errorPage(w, r, nil, http.StatusBadRequest, "Name the delivery: provider and key.")
		return
	}
	d, found, err := c.cfg.Read.Delivery(r.Context(), provider, key)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if !found {
		c.errorPage(w, r, nil, http.StatusNotFound, "No such delivery.")
		return
	}
	c.render(w, r, http.StatusOK, "delivery", "Delivery "+d.DedupKey, d)
}

type redriveData struct {
	Filter      url.Values
	Selected    int
	All         bool
	Before      []views.StatusCount
	After       []views.StatusCount
	Result      RedriveResult
	BackToInbox string
}

// redriveRequest reads the redrive form: the filter travels in its hidden
// fields, as the inbox page had it, and the selected rows' tokens.
func redriveRequest(r *http.Request) (RedriveRequest, bool, error) {
	p := params.New(r.PostForm)
	req := RedriveRequest{Actor: viewerOf(r).Actor, Filter: inboxFilter(p)}
	if err := p.Err(); err != nil {
		return req, false, err
	}
	all := r.PostForm.Get("scope") == "all"
	if all {
		return req, true, nil
	}
	for _, tok := range r.PostForm["key"] {
		ref, err := decodeCursor[inboxRef](tok)
		if err != nil || ref == nil {
			return req, false, fmt.Errorf("%w: key: not a delivery this console listed", errBadParam)
		}
		req.Keys = append(req.Keys, DeliveryRef{Provider: ref.Provider, DedupKey: ref.DedupKey})
	}
	return req, false, nil
}

func (c *consoleServer) redrive(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Redrive == nil {
		c.errorPage(w, r, fmt.Errorf("redriving deliveries is %w", errNotConfigured), 0, "")
		return
	}
	req, all, err := redriveRequest(r)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if !all && len(req.Keys) == 0 {
		c.errorPage(w, r, nil, http.StatusBadRequest, "Select the deliveries to redrive, or redrive all matching.")
		return
	}
	before, err := c.statusCounts(r, req.Filter)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	res, err := c.cfg.Redrive.Redrive(r.Context(), req)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.cfg.Logger.Info("console: redrive", "actor", req.Actor, "selected", res.Selected, "recorded", res.Recorded)
	after, err := c.statusCounts(r, req.Filter)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(r.PostForm, "provider", "status", "type", "from", "to")
	c.render(w, r, http.StatusOK, "redrive", "Redrive", redriveData{
		Filter: filter, Selected: len(req.Keys), All: all, Before: before, After: after, Result: res,
		BackToInbox: Prefix + "/inbox?" + filter.Encode(),
	})
}
