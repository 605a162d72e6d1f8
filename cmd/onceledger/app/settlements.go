package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/reportimport"
)

// DefaultUnsettledAfter is ONCELEDGER_UNSETTLED_AFTER's default.
const DefaultUnsettledAfter = 168 * time.Hour

// NewImporter is the settlement report importer over the ingest service
// (every line through the inbox gate) and the read models (the candidates
// of the unsettled check), parsing the reports of the providers the
// registry gives an importer. The CLI and the HTTP endpoint share it.
func NewImporter(service *ingest.Service, reads *readmodel.Store, unsettledAfter time.Duration) *reportimport.Importer {
	return &reportimport.Importer{Ingest: service, Parsers: registry.Reports(), Candidates: reads, UnsettledAfter: unsettledAfter,
		Links: reads}
}

// reportImporter adapts the importer to the HTTP layer's port.
type reportImporter struct{ im *reportimport.Importer }

var _ httpapi.SettlementImporter = reportImporter{}

func (r reportImporter) ImportReport(ctx context.Context, provider string, src httpapi.ReportSource) (httpapi.ImportSummary, error) {
	return r.ImportReportIn(ctx, provider, src, nil)
}

var _ httpapi.ZonedImporter = reportImporter{}

// ImportReportIn imports with the report's zone (?timezone=; nil: UTC).
func (r reportImporter) ImportReportIn(ctx context.Context, provider string, src httpapi.ReportSource, zone *time.Location) (httpapi.ImportSummary, error) {
	if !r.im.Imports(provider) {
		return httpapi.ImportSummary{}, fmt.Errorf("%w: %q", httpapi.ErrNoReportImporter, provider)
	}
	sum, err := r.im.Import(ctx, provider, reportimport.Source(src), report.Options{Zone: zone})
	if err != nil && errors.Is(err, reportimport.ErrUnknownProvider) {
		err = fmt.Errorf("%w: %w", httpapi.ErrNoReportImporter, err)
	}
	return httpapi.ImportSummary{Lines: sum.Lines, New: sum.New, Duplicates: sum.Duplicates,
		Conflicts: sum.Conflicts}, err
}
