package main

import (
	"fmt"
)

// projectCmd runs the projectors without the HTTP server: for deployments
// that scale ingestion and projection separately. Several may run; the
// advisory lock keeps one active per projection, the others take over when
// it dies.
type projectCmd struct{}

func (projectCmd) Run(g *globals) error {
	svc, done, err := projectionService(g)
	if err != nil {
		return err
	}
	defer done()
	g.log.Info("projecting", "projections", svc.Names())
	if err := svc.Run(g.ctx); err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	g.log.Info("stopped")
	return nil
}
