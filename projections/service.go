package projections

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/onceledger/onceledger/projections/views"
)

// DB is the whole read-model port, as the readmodel adapter implements it.
type DB interface {
	ShadowDB
	AuditDB
}

// Service bundles the feed, the read-model database and the projections for
// the CLI: serve runs Run, and the rebuild, verify and status commands call
// the methods of the same names.
type Service struct {
	feed  Feed
	db    DB
	projs []Projection
	log   *slog.Logger
	opts  []Option
}

// NewService returns a service over the Default projections. log may be nil.
// opts (ReportingZone) configure the projections and Verify.
func NewService(feed Feed, db DB, log *slog.Logger, opts ...Option) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{feed: feed, db: db, projs: Default(opts...), log: log, opts: opts}
}

// Names lists the projections.
func (s *Service) Names() []string {
	out := make([]string, len(s.projs))
	for i, p := range s.projs {
		out[i] = p.Name()
	}
	return out
}

// Projectors returns one projector per projection.
func (s *Service) Projectors() []*Projector {
	out := make([]*Projector, len(s.projs))
	for i, p := range s.projs {
		out[i] = NewProjector(p, s.feed, s.db, s.log)
	}
	return out
}

// Run runs every projector until ctx ends. A projection that stops at a
// poison event stays stopped (recorded in projection_checkpoints) while the
// others go on; Run then returns those *PoisonErrors, joined, once ctx ends.
func (s *Service) Run(ctx context.Context) error {
	pjs := s.Projectors()
	errs := make([]error, len(pjs))
	var wg sync.WaitGroup
	for i, p := range pjs {
		wg.Go(func() { errs[i] = p.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Rebuild rebuilds the named projections (all when names is empty); see
// the package function Rebuild.
func (s *Service) Rebuild(ctx context.Context, names []string, opts RebuildOptions) (Report, error) {
	return Rebuild(ctx, s.feed, s.db, s.projs, names, opts)
}

// Verify checks the ledger invariants; see the package function Verify.
func (s *Service) Verify(ctx context.Context) (Violations, error) {
	return Verify(ctx, s.feed, s.db, s.opts...)
}

// Status reports positions, lags (every event counted) and inbox counts;
// see the package function Status.
func (s *Service) Status(ctx context.Context) (views.Status, error) {
	return Status(ctx, s.feed, s.db, StatusOptions{Inbox: true})
}
