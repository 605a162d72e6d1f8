package app

import (
	"context"
	"log/slog"
	"time"

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

// bankMatchEvery is how often serve looks whether payouts changed, and
// then tells every bank account the payouts it knows unbanked: a payout
// whose webhook or report arrives after its statement matches the line
// waiting in suspense without another import.
const bankMatchEvery = 30 * time.Second

// bankMatchReads is what the matcher reads (readmodel.Store).
type bankMatchReads interface {
	BankAccounts(ctx context.Context) ([]string, error)
	PayoutsChangedAt(ctx context.Context) (time.Time, error)
}

// matchBanks runs until ctx ends: each time the payouts read model has
// changed, every account is matched (bankimport.Importer.Match).
func matchBanks(ctx context.Context, reads bankMatchReads, match func(context.Context, string) (int, error), every time.Duration, log *slog.Logger) {
	var seen time.Time
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := reads.PayoutsChangedAt(ctx)
		if err != nil || !changed.After(seen) {
			continue
		}
		accounts, err := reads.BankAccounts(ctx)
		if err != nil {
			continue
		}
		ok := true
		for _, a := range accounts {
			if n, err := match(ctx, a); err != nil {
				ok = false
				log.Warn("bank match", "account", a, "error", err)
			} else if n > 0 {
				log.Info("bank match: payouts told to the account", "account", a, "payouts", n)
			}
		}
		if ok {
			seen = changed
		}
	}
}
