package app

import (
	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/adapters/httpapi"
)

// ExportTable is the account table of the exports
// (ONCELEDGER_EXPORT_ACCOUNTS, bookexport.LoadTable); nil: the default.
type ExportTable = *bookexport.Table

// exporter writes GET /v1/export/{format} from the read models the /v1
// queries read.
func (a *App) exporter() httpapi.Exporter {
	q := a.reads.Query
	return &bookexport.Exporter{Source: q, Deposits: true, Accounts: a.cfg.ExportAccounts, Zone: a.cfg.ReportingZone,
		Assertions: bookexport.ReadModelAssertions{Reader: q, Zone: a.cfg.ReportingZone}}
}
