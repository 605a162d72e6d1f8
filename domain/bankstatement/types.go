// Package bankstatement is the bank account aggregate: one stream per bank
// account (bank-NAME) holds the account's booked statement lines, its
// statements (sequence numbers and stated balances) and the payouts the
// ledger expects to land in it, and decides, whatever the order they
// arrive in, which payouts each line proves banked (CONTRACT "Bank
// statements: payouts proven into the bank"). Pure: no clock, no I/O; the
// caller delivers each fact once through the inbox gate.
//
// Matching, in order (docs/accountants.md, "Reconciling the bank account"):
//
//  1. A credit (or a debit, for a negative payout) matches the unbanked
//     payouts of its amount and currency whose window holds its booking
//     date: from the payout's arrival date through ArrivalDays business days
//     (Monday to Friday) after it. Where the line's remittance text or
//     reference names a candidate, the one it names most strongly wins:
//     its trace id (unique), then its payout id or the reference the
//     provider prints, then its statement descriptor (not unique: it only
//     narrows equal candidates). Ties go to the earliest arrival date,
//     then the provider's name, then the payout id. A line matched to one
//     payout by less than its trace id moves when a payout it names more
//     strongly becomes known (rematch.go).
//  2. Else it may settle several payouts of one provider and one arrival
//     date, 2 to 8 of them, whose amounts sum to it exactly: groups are
//     tried by arrival date, then provider; within a group the first
//     subset in the order of the payout ids (the lowest ids first) wins.
//     At most 16 payouts of a group are searched, keeping the search bounded.
//  3. A debit flagged as a reversal (camt RvslInd, MT940 RC, BAI2 return
//     codes) matches a banked payout of its amount (reference first, then
//     the latest banked, then provider and id): the payout is returned.
//
// A line that matches nothing posts to suspense:bank:NAME; a credit opens
// unidentified_deposit. A payout that arrives later (its webhook or report
// after the statement) is matched to the suspended lines then, and the
// item clears, so the final ledger does not depend on the order.
package bankstatement

import (
	"github.com/onceledger/onceledger/domain/bankline"
)

// Provider, StreamPrefix, Stream: bankline's.
const (
	Provider     = bankline.Provider
	StreamPrefix = bankline.StreamPrefix
)

// Stream is the stream of the bank account named account.
func Stream(account string) string { return bankline.Stream(account) }

// The inputs (domain/bankline).
type (
	Line      = bankline.Line
	Balance   = bankline.Balance
	Statement = bankline.Statement
	Payout    = bankline.Payout
	Input     = bankline.Input
)

// ErrInvalid: an input the aggregate cannot take.
var ErrInvalid = bankline.ErrInvalid

// Day and AddBusinessDays: bankline's.
var (
	Day             = bankline.Day
	AddBusinessDays = bankline.AddBusinessDays
)

// Account names the ledger accounts of a bank account.
func Account(name string) string { return "bank:" + name }

// Suspense is where a bank account's unmatched lines wait.
func Suspense(name string) string { return "suspense:bank:" + name }

// Reconciliation item kinds the aggregate opens.
const (
	ReconUnidentifiedDeposit = "unidentified_deposit"
	ReconPayoutNotReceived   = "payout_not_received"
	ReconPayoutReturned      = "payout_returned"
	ReconStatementGap        = "statement_gap"
)

// ReconKinds lists them.
func ReconKinds() []string {
	return []string{ReconUnidentifiedDeposit, ReconPayoutNotReceived, ReconPayoutReturned, ReconStatementGap}
}

// DefaultArrivalDays is ONCELEDGER_BANK_ARRIVAL_DAYS's default.
const DefaultArrivalDays = 5
