package views

import "time"

// BankStatement is one bank_statements row: a statement of a bank account
// as imported, with its stated balances (nil when the format states none).
type BankStatement struct {
	Account     string
	Key         string // its delivery's dedup key
	Format      string
	StatementID string
	Seq, Page   int64
	Covers      time.Time // its last booking date
	Currency    string
	Opening     *int64
	OpeningOn   time.Time
	Closing     *int64
	ClosingOn   time.Time
	Entries     int
}

// BankLine is one bank_statement_lines row: a booked line of a bank
// account and what it banked (or returned).
type BankLine struct {
	Account     string
	LineKey     string
	Reference   string
	Format      string
	Statement   string
	BookedOn    time.Time
	ValueOn     time.Time // zero: not given
	Amount      int64     // signed: credits positive
	Currency    string
	Reversal    bool
	Code        string
	Description string
	Status      string // matched, suspense, returned
	Payouts     []BankLinePayout
}

// BankLinePayout is a payout a line banked or returned.
type BankLinePayout struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
}

// BankLineStatuses lists a line's statuses, for filters.
func BankLineStatuses() []string { return []string{"matched", "suspense", "returned"} }

// BankLineFilter selects an account's lines, newest booking date first
// (then line key); Status "" keeps every line.
type BankLineFilter struct {
	Account string
	Status  string
	After   *BankLineKey
	Limit   int // <= 0: every line
}

// BankLineKey is a position in the lines' order (the console's cursor).
type BankLineKey struct {
	BookedOn time.Time `json:"b"`
	LineKey  string    `json:"k"`
}

// Key returns the line's position in the order.
func (l BankLine) Key() BankLineKey { return BankLineKey{BookedOn: l.BookedOn, LineKey: l.LineKey} }
