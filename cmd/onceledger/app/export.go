package app

import (
	"time"

	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
)

// ExportTable is the account table of the exports
// (ONCELEDGER_EXPORT_ACCOUNTS, bookexport.LoadTable); nil: the default.
type ExportTable = *bookexport.Table

// exporter writes GET /v1/export/{format} from the read models the /v1
// queries read.
func (a *App) exporter() httpapi.Exporter {
	return NewExporter(a.reads.Query, a.cfg.ExportAccounts, a.cfg.ReportingZone)
}

// NewExporter is the exporter of GET /v1/export/{format} and of `onceledger
// export` (one construction: the command writes the file the server
// answers), over the read models q, with the account table (nil: the
// default) in the reporting zone.
func NewExporter(q *readmodel.Store, table ExportTable, zone *time.Location) *bookexport.Exporter {
	return &bookexport.Exporter{Source: q, Deposits: true, Accounts: table, Zone: zone,
		Assertions: bookexport.ReadModelAssertions{Reader: q, Zone: zone}}
}
