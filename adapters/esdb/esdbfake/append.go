package esdbfake

import (
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// streamsService is the event_store.client.streams.Streams implementation.
type streamsService struct {
	api.UnimplementedStreamsServer
	s *Server
}

// proposed is a validated proposed message.
type proposed struct {
	id          uuid.UUID
	eventType   string
	contentType string
	data        []byte
	metadata    []byte
}

// Append reads the options message, then the proposed messages until the
// client closes its side, and applies them atomically.
func (v *streamsService) Append(call api.Streams_AppendServer) error {
	first, err := call.Recv()
	if err != nil {
		return err
	}
	opts := first.GetOptions()
	if opts == nil {
		return status.Error(codes.InvalidArgument, "first append message must carry options")
	}
	stream := string(opts.GetStreamIdentifier().GetStreamName())
	if stream == "" {
		return status.Error(codes.InvalidArgument, "stream name is required")
	}
	var events []proposed
	for {
		msg, err := call.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		pm := msg.GetProposedMessage()
		if pm == nil {
			return status.Error(codes.InvalidArgument, "expected a proposed message")
		}
		p, err := validate(pm)
		if err != nil {
			return err
		}
		events = append(events, p)
	}

	v.s.mu.Lock()
	v.s.appends++
	delay := v.s.delay
	v.s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-call.Context().Done():
			return status.FromContextError(call.Context().Err()).Err()
		}
	}

	v.s.mu.Lock()
	resp := v.s.appendLocked(stream, opts, events)
	v.s.mu.Unlock()
	return call.SendAndClose(resp)
}

func validate(pm *api.AppendReq_ProposedMessage) (proposed, error) {
	id, err := parseUUID(pm.GetId())
	if err != nil {
		return proposed{}, status.Errorf(codes.InvalidArgument, "event id: %v", err)
	}
	md := pm.GetMetadata()
	p := proposed{
		id:          id,
		eventType:   md["type"],
		contentType: md["content-type"],
		data:        pm.GetData(),
		metadata:    pm.GetCustomMetadata(),
	}
	if p.eventType == "" {
		return proposed{}, status.Error(codes.InvalidArgument, "metadata \"type\" is required")
	}
	if p.contentType != "application/json" && p.contentType != "application/octet-stream" {
		return proposed{}, status.Errorf(codes.InvalidArgument, "metadata \"content-type\" must be application/json or application/octet-stream, got %q", p.contentType)
	}
	return p, nil
}

func parseUUID(u *shared.UUID) (uuid.UUID, error) {
	switch {
	case u == nil:
		return uuid.Nil, errors.New("missing")
	case u.GetStructured() != nil:
		var b [16]byte
		most, least := uint64(u.GetStructured().GetMostSignificantBits()), uint64(u.GetStructured().GetLeastSignificantBits())
		for i := 0; i < 8; i++ {
			b[i] = byte(most >> (56 - 8*i))
			b[8+i] = byte(least >> (56 - 8*i))
		}
		return uuid.UUID(b), nil
	default:
		return uuid.Parse(u.GetString_())
	}
}

func protoUUID(id uuid.UUID, structured bool) *shared.UUID {
	if !structured {
		return &shared.UUID{Value: &shared.UUID_String_{String_: id.String()}}
	}
	var most, least uint64
	for i := 0; i < 8; i++ {
		most = most<<8 | uint64(id[i])
		least = least<<8 | uint64(id[8+i])
	}
	return &shared.UUID{Value: &shared.UUID_Structured_{Structured: &shared.UUID_Structured{
		MostSignificantBits:  int64(most),
		LeastSignificantBits: int64(least),
	}}}
}

// appendLocked applies the optimistic concurrency and idempotence rules.
// Revisions are int64 here so that -1 can mean "no stream".
func (s *Server) appendLocked(stream string, opts *api.AppendReq_Options, events []proposed) *api.AppendResp {
	existing := s.streams[stream]
	current := int64(len(existing)) - 1

	switch exp := opts.GetExpectedStreamRevision().(type) {
	case *api.AppendReq_Options_Revision:
		return s.appendExact(stream, int64(exp.Revision), events, opts)
	case *api.AppendReq_Options_NoStream:
		return s.appendExact(stream, -1, events, opts)
	case *api.AppendReq_Options_StreamExists:
		if current < 0 {
			return wrongVersion(current, opts)
		}
		return s.appendLoose(stream, events, opts)
	default: // Any, and an absent option, which the server treats as Any
		return s.appendLoose(stream, events, opts)
	}
}

func (s *Server) appendExact(stream string, expected int64, events []proposed, opts *api.AppendReq_Options) *api.AppendResp {
	existing := s.streams[stream]
	current := int64(len(existing)) - 1
	switch {
	case expected == current:
		return s.write(stream, events)
	case expected > current || len(events) == 0:
		return wrongVersion(current, opts)
	}
	// The stream moved past the expected revision: a retry of the write that
	// moved it is an idempotent success, anything else a conflict.
	start := int(expected + 1)
	if start+len(events) > len(existing) {
		return wrongVersion(current, opts)
	}
	for i, e := range events {
		if existing[start+i].id != e.id {
			return wrongVersion(current, opts)
		}
	}
	return success(existing[start+len(events)-1])
}

// appendLoose handles Any and StreamExists: no conflict, best-effort
// idempotence on the event ids.
func (s *Server) appendLoose(stream string, events []proposed, opts *api.AppendReq_Options) *api.AppendResp {
	existing := s.streams[stream]
	if len(events) > 0 {
		for i, r := range existing {
			if r.id != events[0].id {
				continue
			}
			if i+len(events) > len(existing) {
				return wrongVersion(int64(len(existing))-1, opts)
			}
			for j, e := range events {
				if existing[i+j].id != e.id {
					return wrongVersion(int64(len(existing))-1, opts)
				}
			}
			return success(existing[i+len(events)-1])
		}
	}
	return s.write(stream, events)
}

func (s *Server) write(stream string, events []proposed) *api.AppendResp {
	existing := s.streams[stream]
	if len(events) == 0 {
		if len(existing) == 0 {
			return &api.AppendResp{Result: &api.AppendResp_Success_{Success: &api.AppendResp_Success{
				CurrentRevisionOption: &api.AppendResp_Success_NoStream{NoStream: &shared.Empty{}},
				PositionOption:        &api.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}},
			}}}
		}
		return success(existing[len(existing)-1])
	}
	created := time.Now().UnixNano() / 100
	commit := s.nextPos
	var last *record
	for _, e := range events {
		r := &record{
			id:          e.id,
			stream:      stream,
			revision:    uint64(len(existing)),
			eventType:   e.eventType,
			contentType: e.contentType,
			data:        e.data,
			metadata:    e.metadata,
			created:     created,
			commit:      commit,
			prepare:     s.nextPos,
		}
		// Advance like a log offset: header plus payload.
		s.nextPos += uint64(128 + len(stream) + len(e.eventType) + len(e.data) + len(e.metadata))
		existing = append(existing, r)
		s.log = append(s.log, r)
		last = r
	}
	s.streams[stream] = existing
	close(s.changed)
	s.changed = make(chan struct{})
	return success(last)
}

func success(last *record) *api.AppendResp {
	return &api.AppendResp{Result: &api.AppendResp_Success_{Success: &api.AppendResp_Success{
		CurrentRevisionOption: &api.AppendResp_Success_CurrentRevision{CurrentRevision: last.revision},
		PositionOption: &api.AppendResp_Success_Position{Position: &api.AppendResp_Position{
			CommitPosition:  last.commit,
			PreparePosition: last.prepare,
		}},
	}}}
}

func wrongVersion(current int64, opts *api.AppendReq_Options) *api.AppendResp {
	w := &api.AppendResp_WrongExpectedVersion{}
	if current < 0 {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
		w.CurrentRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_NoStream_20_6_0{NoStream_20_6_0: &shared.Empty{}}
	} else {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: uint64(current)}
		w.CurrentRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_CurrentRevision_20_6_0{CurrentRevision_20_6_0: uint64(current)}
	}
	switch exp := opts.GetExpectedStreamRevision().(type) {
	case *api.AppendReq_Options_Revision:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedRevision{ExpectedRevision: exp.Revision}
		w.ExpectedRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_ExpectedRevision_20_6_0{ExpectedRevision_20_6_0: exp.Revision}
	case *api.AppendReq_Options_NoStream:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedNoStream{ExpectedNoStream: &shared.Empty{}}
	case *api.AppendReq_Options_StreamExists:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedStreamExists{ExpectedStreamExists: &shared.Empty{}}
		w.ExpectedRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_StreamExists_20_6_0{StreamExists_20_6_0: &shared.Empty{}}
	default:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedAny{ExpectedAny: &shared.Empty{}}
		w.ExpectedRevisionOption_20_6_0 = &api.AppendResp_WrongExpectedVersion_Any_20_6_0{Any_20_6_0: &shared.Empty{}}
	}
	return &api.AppendResp{Result: &api.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: w}}
}

// systemMetadata is what the client requires on every recorded event.
func (r *record) systemMetadata() map[string]string {
	return map[string]string{
		"type":         r.eventType,
		"content-type": r.contentType,
		"created":      strconv.FormatInt(r.created, 10),
	}
}
