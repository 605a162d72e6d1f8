package esdbfake

import (
	"regexp"
	"strings"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// filter is a compiled server-side filter of $all reads and subscriptions.
type filter struct {
	onType   bool // match the event type instead of the stream name
	prefixes []string
	re       *regexp.Regexp
	interval int // checkpoint every interval scanned events (subscriptions)
}

func compileFilter(o *api.ReadReq_Options_FilterOptions) (*filter, error) {
	if o == nil {
		return nil, nil
	}
	f := &filter{}
	var expr *api.ReadReq_Options_FilterOptions_Expression
	switch x := o.GetFilter().(type) {
	case *api.ReadReq_Options_FilterOptions_StreamIdentifier:
		expr = x.StreamIdentifier
	case *api.ReadReq_Options_FilterOptions_EventType:
		expr, f.onType = x.EventType, true
	default:
		return nil, status.Error(codes.InvalidArgument, "filter needs a stream identifier or event type expression")
	}
	f.prefixes = expr.GetPrefix()
	if len(f.prefixes) == 0 {
		re, err := regexp.Compile(expr.GetRegex())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "filter regex: %v", err)
		}
		f.re = re
	}
	mult := int(o.GetCheckpointIntervalMultiplier())
	if mult < 1 {
		mult = 1
	}
	f.interval = mult
	if m, ok := o.GetWindow().(*api.ReadReq_Options_FilterOptions_Max); ok && m.Max > 0 {
		f.interval = int(m.Max) * mult
	}
	return f, nil
}

func (f *filter) match(r *record) bool {
	if f == nil {
		return true
	}
	subject := r.stream
	if f.onType {
		subject = r.eventType
	}
	if f.re != nil {
		return f.re.MatchString(subject)
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(subject, p) {
			return true
		}
	}
	return false
}

// Read serves stream reads, $all reads and both kinds of subscription.
func (v *streamsService) Read(req *api.ReadReq, call api.Streams_ReadServer) error {
	o := req.GetOptions()
	if o == nil {
		return status.Error(codes.InvalidArgument, "read options are required")
	}
	structured := o.GetUuidOption().GetString_() == nil
	f, err := compileFilter(o.GetFilter())
	if err != nil {
		return err
	}
	backwards := o.GetReadDirection() == api.ReadReq_Options_Backwards
	subscribe := o.GetSubscription() != nil
	if subscribe && backwards {
		return status.Error(codes.InvalidArgument, "subscriptions read forwards")
	}

	switch so := o.GetStreamOption().(type) {
	case *api.ReadReq_Options_Stream:
		name := string(so.Stream.GetStreamIdentifier().GetStreamName())
		if name == "" {
			return status.Error(codes.InvalidArgument, "stream name is required")
		}
		if subscribe {
			return v.subscribeStream(call, name, so.Stream, structured)
		}
		return v.readStream(call, name, so.Stream, backwards, o.GetCount(), structured)
	case *api.ReadReq_Options_All:
		if subscribe {
			return v.subscribeAll(call, so.All, f, structured)
		}
		return v.readAll(call, so.All, backwards, o.GetCount(), f, structured)
	default:
		return status.Error(codes.InvalidArgument, "read needs a stream or $all")
	}
}

func (v *streamsService) readStream(call api.Streams_ReadServer, name string, so *api.ReadReq_Options_StreamOptions, backwards bool, count uint64, structured bool) error {
	v.s.mu.Lock()
	events := v.s.streams[name] // append-only: the prefix we hold never changes
	v.s.mu.Unlock()
	if len(events) == 0 {
		return call.Send(&api.ReadResp{Content: &api.ReadResp_StreamNotFound_{StreamNotFound: &api.ReadResp_StreamNotFound{
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(name)},
		}}})
	}
	n := uint64(len(events))
	var sent uint64
	if !backwards {
		var from uint64
		switch x := so.GetRevisionOption().(type) {
		case *api.ReadReq_Options_StreamOptions_Revision:
			from = x.Revision
		case *api.ReadReq_Options_StreamOptions_End:
			from = n
		}
		for i := from; i < n && sent < count; i++ {
			if err := call.Send(eventResp(events[i], structured)); err != nil {
				return err
			}
			sent++
		}
		return nil
	}
	from := int64(n) - 1
	switch x := so.GetRevisionOption().(type) {
	case *api.ReadReq_Options_StreamOptions_Revision:
		if x.Revision < n {
			from = int64(x.Revision)
		}
	case *api.ReadReq_Options_StreamOptions_Start:
		from = 0
	}
	for i := from; i >= 0 && sent < count; i-- {
		if err := call.Send(eventResp(events[i], structured)); err != nil {
			return err
		}
		sent++
	}
	return nil
}

// readAll reads the log. Forwards from a position includes the event at that
// position; backwards from a position returns the events before it.
func (v *streamsService) readAll(call api.Streams_ReadServer, ao *api.ReadReq_Options_AllOptions, backwards bool, count uint64, f *filter, structured bool) error {
	v.s.mu.Lock()
	log := v.s.log
	v.s.mu.Unlock()
	var sent uint64
	if !backwards {
		from := 0
		switch x := ao.GetAllOption().(type) {
		case *api.ReadReq_Options_AllOptions_Position:
			from = firstAfter(log, x.Position, true)
		case *api.ReadReq_Options_AllOptions_End:
			from = len(log)
		}
		for i := from; i < len(log) && sent < count; i++ {
			if !f.match(log[i]) {
				continue
			}
			if err := call.Send(eventResp(log[i], structured)); err != nil {
				return err
			}
			sent++
		}
		return nil
	}
	from := len(log) - 1
	switch x := ao.GetAllOption().(type) {
	case *api.ReadReq_Options_AllOptions_Position:
		from = firstAfter(log, x.Position, true) - 1
	case *api.ReadReq_Options_AllOptions_Start:
		from = -1
	}
	for i := from; i >= 0 && sent < count; i-- {
		if !f.match(log[i]) {
			continue
		}
		if err := call.Send(eventResp(log[i], structured)); err != nil {
			return err
		}
		sent++
	}
	return nil
}

// firstAfter is the index of the first event at or after (inclusive) or
// strictly after (!inclusive) the position.
func firstAfter(log []*record, p *api.ReadReq_Options_Position, inclusive bool) int {
	c, pr := p.GetCommitPosition(), p.GetPreparePosition()
	for i, r := range log {
		if r.after(c, pr) || (inclusive && r.commit == c && r.prepare == pr) {
			return i
		}
	}
	return len(log)
}

func (v *streamsService) subscribeStream(call api.Streams_ReadServer, name string, so *api.ReadReq_Options_StreamOptions, structured bool) error {
	v.s.mu.Lock()
	cursor := 0
	var minRevision uint64 // events of the stream with a revision >= this
	switch x := so.GetRevisionOption().(type) {
	case *api.ReadReq_Options_StreamOptions_Revision:
		minRevision = x.Revision + 1 // subscriptions start after the revision
	case *api.ReadReq_Options_StreamOptions_End:
		cursor = len(v.s.log)
	}
	v.s.mu.Unlock()
	match := func(r *record) bool { return r.stream == name && r.revision >= minRevision }
	return v.subscribe(call, cursor, match, nil, structured)
}

func (v *streamsService) subscribeAll(call api.Streams_ReadServer, ao *api.ReadReq_Options_AllOptions, f *filter, structured bool) error {
	v.s.mu.Lock()
	cursor := 0
	switch x := ao.GetAllOption().(type) {
	case *api.ReadReq_Options_AllOptions_Position:
		cursor = firstAfter(v.s.log, x.Position, false) // starts after the position
	case *api.ReadReq_Options_AllOptions_End:
		cursor = len(v.s.log)
	}
	v.s.mu.Unlock()
	return v.subscribe(call, cursor, f.match, f, structured)
}

// subscribe confirms, catches up from cursor, says CaughtUp, then follows
// the log live until the call ends. It works from its own cursor rather
// than being pushed to, so a slow subscriber never blocks writers.
func (v *streamsService) subscribe(call api.Streams_ReadServer, cursor int, match func(*record) bool, f *filter, structured bool) error {
	confirm := &api.ReadResp{Content: &api.ReadResp_Confirmation{Confirmation: &api.ReadResp_SubscriptionConfirmation{
		SubscriptionId: uuid.NewString(),
	}}}
	if err := call.Send(confirm); err != nil {
		return err
	}
	caughtUp := false
	scanned := 0 // events looked at since the last checkpoint
	var last *record
	for {
		v.s.mu.Lock()
		batch := v.s.log[cursor:]
		changed := v.s.changed
		v.s.mu.Unlock()

		for _, r := range batch {
			cursor++
			last = r
			if match(r) {
				if err := call.Send(eventResp(r, structured)); err != nil {
					return err
				}
			}
			if f != nil {
				scanned++
				if scanned >= f.interval {
					scanned = 0
					if err := call.Send(checkpointResp(r)); err != nil {
						return err
					}
				}
			}
		}
		if len(batch) > 0 {
			continue
		}
		if f != nil && scanned > 0 && last != nil {
			scanned = 0
			if err := call.Send(checkpointResp(last)); err != nil {
				return err
			}
		}
		if !caughtUp {
			caughtUp = true
			if err := call.Send(&api.ReadResp{Content: &api.ReadResp_CaughtUp_{CaughtUp: &api.ReadResp_CaughtUp{}}}); err != nil {
				return err
			}
		}
		select {
		case <-changed:
		case <-call.Context().Done():
			return status.FromContextError(call.Context().Err()).Err()
		}
	}
}

func checkpointResp(r *record) *api.ReadResp {
	return &api.ReadResp{Content: &api.ReadResp_Checkpoint_{Checkpoint: &api.ReadResp_Checkpoint{
		CommitPosition:  r.commit,
		PreparePosition: r.prepare,
	}}}
}

func eventResp(r *record, structured bool) *api.ReadResp {
	return &api.ReadResp{Content: &api.ReadResp_Event{Event: &api.ReadResp_ReadEvent{
		Event: &api.ReadResp_ReadEvent_RecordedEvent{
			Id:               protoUUID(r.id, structured),
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(r.stream)},
			StreamRevision:   r.revision,
			PreparePosition:  r.prepare,
			CommitPosition:   r.commit,
			Metadata:         r.systemMetadata(),
			CustomMetadata:   r.metadata,
			Data:             r.data,
		},
		Position: &api.ReadResp_ReadEvent_CommitPosition{CommitPosition: r.commit},
	}}}
}
