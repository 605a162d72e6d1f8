package app

import (
	"context"

	"github.com/onceledger/onceledger/adapters/bankimport"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/ingest"
)

// bankDecider decides bank accounts' deliveries on their streams
// (domain/bankstatement) and every other delivery as before.
func bankDecider(cfg Config) bankimport.Decider {
	return bankimport.Decider{Payments: ingest.PaymentDecider{}, ArrivalDays: cfg.BankArrivalDays}
}

// BankImporter imports bank statements through the ingest service,
// telling each account the payouts the read model knows unbanked, and
// states each statement's balances as balance assertions on bank:NAME.
func (c *Core) BankImporter() *bankimport.Importer {
	return &bankimport.Importer{Ingest: c.service, Payouts: c.query, Asserter: c.Balances()}
}

// bankStatements adapts the importer to the HTTP layer's port.
type bankStatements struct{ im *bankimport.Importer }

var _ httpapi.BankImporter = bankStatements{}

func (b bankStatements) ImportBankStatement(ctx context.Context, account string, src httpapi.ReportSource) (httpapi.BankImportSummary, error) {
	sum, err := b.im.Import(ctx, account, bankimport.Source(src))
	return httpapi.BankImportSummary(sum), err
}
