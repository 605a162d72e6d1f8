// Package assertion is the books proven against what the provider holds
// (docs/reference.md, "Provider balances"): balance assertions (a balance a
// provider, a bank or a person states for one account and currency at one
// moment), opening balances, and the adjustments an accountant posts to
// resolve an item. Each account and currency has its own stream
// (StreamID); the aggregate remembers what it recorded, so that importing
// the same file twice states nothing twice, and decides each command
// purely: clocks, ids and actors come in with the command.
//
// Whether an assertion agrees is not decided here: it depends on every
// fact the ledger holds for the account, late ones included, so the
// reconciliation projection compares each assertion with the ledger's
// balance as of its moment and keeps that comparison current
// (projections/assertions.go).
package assertion

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

// StreamPrefix starts every stream of this package: one per account and
// currency (StreamID).
const StreamPrefix = "assertion-"

// AdjustmentStreamPrefix starts the stream of the adjustments made to
// resolve an item that lives in a payment or payout stream (whose codec
// holds only the payment's events): AdjustmentStream.
const AdjustmentStreamPrefix = "adjustment-"

// StreamID is the stream of an account and currency's assertions, its
// opening balance and the adjustments resolving its balance_mismatch item.
func StreamID(account string, c money.Currency) string {
	return StreamPrefix + account + "-" + string(c)
}

// StatementStream is the stream of the balances stated for an account and
// currency as of one UTC day: statements are split by day so that
// recording a file reads only the days it states (a bill of 100,000 lines
// a day would otherwise make every import read the account's whole
// history to tell new points from known ones).
func StatementStream(account string, c money.Currency, day time.Time) string {
	return StreamID(account, c) + "@" + day.UTC().Format(time.DateOnly)
}

// AdjustmentStream is the stream of the adjustments resolving items of the
// stream itemStream, when that is not an assertion stream.
func AdjustmentStream(itemStream string) string {
	if strings.HasPrefix(itemStream, StreamPrefix) || strings.HasPrefix(itemStream, AdjustmentStreamPrefix) {
		return itemStream
	}
	return AdjustmentStreamPrefix + itemStream
}

// IsStream reports whether a stream holds this package's events.
func IsStream(stream string) bool {
	return strings.HasPrefix(stream, StreamPrefix) || strings.HasPrefix(stream, AdjustmentStreamPrefix)
}

// ReconBalanceMismatch is the reconciliation item kind a differing
// assertion opens: one per account and currency (its key is
// ItemKey), in the account's stream.
const ReconBalanceMismatch = "balance_mismatch"

// ItemKey is the key of the balance_mismatch item of an account and
// currency.
func ItemKey(account string, c money.Currency) string { return account + "/" + string(c) }

// BankProvider is the provider name of bank accounts' assertions
// (bank:NAME, stated by bank statements).
const BankProvider = "bank"

// Errors of the decisions; the HTTP layer maps them to 400 (ErrInvalid)
// and 409 (ErrConflict).
var (
	// ErrInvalid: the command itself is wrong (a field names the problem).
	ErrInvalid = errors.New("invalid")
	// ErrConflict: the command contradicts what the stream recorded.
	ErrConflict = errors.New("conflict")
)

// FieldError names the field of a command that is wrong. It wraps
// ErrInvalid.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

var (
	// chartAccount is every account of the chart (docs/reference.md,
	// "Money and accounts"): what an adjustment may post to.
	chartAccount = regexp.MustCompile(`^(revenue:(sales|refunds)|expenses:(disputes|writeoffs)|` +
		`expenses:(fees|discounts):[a-z0-9][a-z0-9_-]*|receivable:disputes:[a-z0-9][a-z0-9_-]*|` +
		`provider:[a-z0-9][a-z0-9_-]*:(balance|reserve)|bank:[A-Za-z0-9][A-Za-z0-9_.-]*|suspense:bank:[A-Za-z0-9][A-Za-z0-9_.-]*|` +
		`equity:opening_balances|fx:trading)$`)
)

// OpeningBalances is the account opening balances are posted against.
const OpeningBalances = "equity:opening_balances"

// Writeoffs is the chart's account for amounts written off by an
// adjustment.
const Writeoffs = "expenses:writeoffs"

// ProviderOf is the provider whose statement can assert a balance of
// account: p for provider:p:balance and provider:p:reserve, "bank" for a
// bank account bank:NAME (bank:payouts is money between the two, which
// nobody states), p for a payout batch's scope provider:p:batch:ID
// (BatchAccount). ok is false for any other account.
//
// The grammar, as regular expressions (TestProviderOfIsItsGrammar holds the
// parser below to them): provider:([a-z0-9][a-z0-9_-]*):(balance|reserve),
// provider:([a-z0-9][a-z0-9_-]*):batch:([^\s]+) and
// bank:([A-Za-z0-9][A-Za-z0-9_.-]*). Parsed by hand because every
// projection that keeps balance movements asks it of every posting: the
// regular expressions were 5 % of a rebuild's CPU (docs/benchmarks.md,
// issue 40).
func ProviderOf(account string) (provider string, ok bool) {
	if rest, found := strings.CutPrefix(account, "provider:"); found {
		name, tail, found := strings.Cut(rest, ":")
		if !found || !accountName(name, false) {
			return "", false
		}
		if tail == "balance" || tail == "reserve" || isBatchID(strings.TrimPrefix(tail, "batch:"), tail) {
			return name, true
		}
		return "", false
	}
	if name, found := strings.CutPrefix(account, "bank:"); found && accountName(name, true) && account != "bank:payouts" {
		return BankProvider, true
	}
	return "", false
}

// accountName reports whether s is a provider's name ([a-z0-9][a-z0-9_-]*)
// or, bank, a bank account's ([A-Za-z0-9][A-Za-z0-9_.-]*).
func accountName(s string, bank bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case bank && c >= 'A' && c <= 'Z':
		case i > 0 && (c == '_' || c == '-'):
		case i > 0 && bank && c == '.':
		default:
			return false
		}
	}
	return true
}

// isBatchID reports whether id, what follows "batch:" in tail, is a
// payout batch's id: not empty and without white space (RE2's \s:
// tab, newline, form feed, carriage return, space).
func isBatchID(id, tail string) bool {
	if len(id) == len(tail) || id == "" {
		return false // tail did not start with "batch:", or nothing follows it
	}
	return !strings.ContainsAny(id, "\t\n\f\r ")
}

// BatchAccount is the scope of one payout batch of provider's balance
// (Adyen's "<merchant account>/<batch>/<currency>", a payable batch paid
// out whole by its MerchantPayout): not an account of the chart, nothing
// posts to it, but a batch's statement asserts it. Its ledger figure is
// the part of provider:p:balance the batch's own lines settle: the
// postings on provider:p:balance of the facts its lines recorded or
// settled (a capture or refund a webhook recorded before its line counts
// when its line comes), the fees and conversions the lines posted, its
// payout, and the balance it carries between batches
// (projections/batches.go). Captures a webhook recorded that no line of
// the batch settles (still settling, in a later batch) never count, which
// is why a batch cannot be asserted on provider:p:balance itself.
func BatchAccount(provider, payoutID string) string {
	return "provider:" + provider + ":batch:" + payoutID
}

// IsBatchAccount reports whether account is a batch's scope
// (BatchAccount).
func IsBatchAccount(account string) bool {
	rest, found := strings.CutPrefix(account, "provider:")
	if !found {
		return false
	}
	name, tail, found := strings.Cut(rest, ":")
	return found && accountName(name, false) && isBatchID(strings.TrimPrefix(tail, "batch:"), tail)
}

// InChart reports whether account is an account of the chart.
func InChart(account string) bool { return chartAccount.MatchString(account) }

// MaxAmount bounds a stated amount, as every fact's (delivery.MaxAmount).
const MaxAmount int64 = 1_000_000_000_000_000

func checkAmount(field string, a int64) error {
	if a > MaxAmount || a < -MaxAmount {
		return invalid(field, "%d is beyond 10^15 minor units", a)
	}
	return nil
}

func checkCurrency(field string, c money.Currency) error {
	if !c.Known() || string(c) != strings.ToUpper(string(c)) {
		return invalid(field, "%q is not an ISO 4217 currency with minor units", string(c))
	}
	return nil
}

func checkTime(field string, t time.Time) error {
	if t.IsZero() {
		return invalid(field, "required (RFC 3339)")
	}
	return nil
}
