package report

import (
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

// Stated is a balance a report states (docs/reference.md, "Provider
// balances"): Account's balance in Currency at AsOf, in minor units,
// signed as the ledger signs the account (money the provider holds for
// the merchant is positive). Importers hand it to Options.Stated, beside
// the lines: Alipay's account bill 账户余额 and WeChat Pay's fund-flow bill
// 账户结余 after each line, Stripe's balance summary's starting and ending
// balances.
type Stated struct {
	Account  string
	Currency money.Currency
	AsOf     time.Time
	Amount   int64
	// Source names the file kind ("alipay account bill").
	Source string
}
