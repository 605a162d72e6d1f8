package bookexport

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/domain/ledger"
)

// The account table: every onceledger account's name in each tool
// (docs/accountants.md, "Taking the books to your accounting tool"). The
// default derives each name from the chart's structure, variable parts
// (provider names, bank account names) included; an accountant's file
// (ONCELEDGER_EXPORT_ACCOUNTS) overrides any line of it. A name the tool
// would refuse, or an account outside the chart, is an error naming the
// account: never a silently mangled name.

// ErrUnmappedAccount: the table has no valid name for an account in the
// books (an account outside the chart, a variable part the tool cannot
// spell, or an override the tool would refuse).
var ErrUnmappedAccount = errors.New("account has no name in the export's account table")

// UnmappedError names the account, the format and why.
type UnmappedError struct {
	Format  Format
	Account string
	Reason  string
}

func (e *UnmappedError) Error() string {
	return fmt.Sprintf("export %s: account %q: %s (add a line %s=… to the ONCELEDGER_EXPORT_ACCOUNTS file)",
		e.Format, e.Account, e.Reason, e.Account)
}

func (e *UnmappedError) Unwrap() error { return ErrUnmappedAccount }

// ErrBadTable: the ONCELEDGER_EXPORT_ACCOUNTS file is malformed.
var ErrBadTable = errors.New("bad export account table")

// Table names onceledger accounts in each tool.
type Table struct {
	// all holds overrides for every format; per those of one ([format]
	// sections of the file).
	all map[string]string
	per map[Format]map[string]string
}

// DefaultTable is the documented default, with no overrides.
func DefaultTable() *Table {
	return &Table{all: map[string]string{}, per: map[Format]map[string]string{}}
}

// LoadTable reads the ONCELEDGER_EXPORT_ACCOUNTS file at path ("" = the
// default table alone).
func LoadTable(path string) (*Table, error) {
	if path == "" {
		return DefaultTable(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ONCELEDGER_EXPORT_ACCOUNTS: %w", err)
	}
	defer f.Close()
	return ParseTable(f, path)
}

// ParseTable reads an override file: one `onceledger-account=their-account`
// a line; blank lines and lines starting with # are ignored; a line
// `[beancount]`, `[hledger]`, `[xero]` or `[quickbooks]` makes the lines
// after it apply to that tool only (`[all]` back to every tool).
func ParseTable(r io.Reader, name string) (*Table, error) {
	t := DefaultTable()
	sc := bufio.NewScanner(r)
	section := Format("")
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			s := strings.TrimSpace(line[1 : len(line)-1])
			if s == "all" {
				section = ""
				continue
			}
			f, err := ParseFormat(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %s line %d: section %q: want beancount, hledger, xero, quickbooks or all", ErrBadTable, name, n, s)
			}
			section = f
			continue
		}
		acct, theirs, ok := strings.Cut(line, "=")
		acct, theirs = strings.TrimSpace(acct), strings.TrimSpace(theirs)
		if !ok || acct == "" || theirs == "" {
			return nil, fmt.Errorf("%w: %s line %d: want onceledger-account=their-account, got %q", ErrBadTable, name, n, line)
		}
		m := t.all
		if section != "" {
			if t.per[section] == nil {
				t.per[section] = map[string]string{}
			}
			m = t.per[section]
		}
		if _, dup := m[acct]; dup {
			return nil, fmt.Errorf("%w: %s line %d: %s is mapped twice", ErrBadTable, name, n, acct)
		}
		m[acct] = theirs
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadTable, name, err)
	}
	return t, nil
}

// Name is account's name in format f: the override when there is one,
// else the default; either way checked against the tool's rules.
func (t *Table) Name(f Format, account string) (string, error) {
	name, ok := t.per[f][account]
	if !ok {
		name, ok = t.all[account]
	}
	if !ok {
		var err error
		if name, err = defaultName(f, account); err != nil {
			return "", &UnmappedError{Format: f, Account: account, Reason: err.Error()}
		}
	}
	if err := valid(f, name); err != nil {
		return "", &UnmappedError{Format: f, Account: account, Reason: fmt.Sprintf("%q: %v", name, err)}
	}
	return name, nil
}

// overridden: the file names account for format f.
func (t *Table) overridden(f Format, account string) bool {
	if _, ok := t.per[f][account]; ok {
		return true
	}
	_, ok := t.all[account]
	return ok
}

// OpeningBalances is the account an export's opening transactions post
// against (the contract's equity:opening_balances).
const OpeningBalances = "equity:opening_balances"

// providerNames spells the providers as their owners do; any other
// provider name is capitalised part by part.
var providerNames = map[string]string{
	"stripe": "Stripe", "standard": "Standard", "adyen": "Adyen", "paypal": "PayPal", "paypal-ipn": "PayPal-IPN",
	"square": "Square", "circle": "Circle", "alipay": "Alipay", "wechatpay": "WeChatPay",
}

// providerCodes number the providers for Xero's short account codes.
var providerCodes = map[string]string{
	"stripe": "01", "standard": "02", "adyen": "03", "paypal": "04", "square": "05",
	"circle": "06", "alipay": "07", "wechatpay": "08", "paypal-ipn": "09",
}

// namePart is what a variable part of an account (a provider or bank
// account name) may hold, as the chart spells them: letters and digits,
// and '-', '_' or '.' between them.
var namePart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// capitalised spells a variable part as an account component: a capital
// at its start and after each separator, and each '_' or '.' as '-'
// (beancount has no '_' in account names): "operating_eur" →
// "Operating-Eur". Two parts that differ only there ("a_b", "a-b") come
// out the same: the export refuses that pair, naming both (Export).
func capitalised(s string) (string, error) {
	if p, ok := providerNames[s]; ok {
		return p, nil
	}
	if !namePart.MatchString(s) {
		return "", fmt.Errorf("%q is not letters and digits joined by - _ or .", s)
	}
	b := []byte(s)
	up := true
	for i, c := range b {
		switch {
		case c == '-' || c == '_' || c == '.':
			b[i], up = '-', true
		case up:
			b[i], up = byte(strings.ToUpper(string(c))[0]), false
		}
	}
	return string(b), nil
}

// chartAccount is an account of the chart taken apart: its kind and its
// variable part (a provider, a bank account name), if any.
type chartAccount struct {
	kind string // e.g. "provider:balance", "revenue:sales", "bank:name"
	part string
}

// parse places account in the chart (docs/reference.md, "Money and
// accounts").
func parse(account string) (chartAccount, error) {
	switch account {
	case ledger.RevenueSales, ledger.RevenueRefunds, ledger.ExpensesDispute, ledger.BankPayouts,
		OpeningBalances, "fx:trading", "expenses:writeoffs":
		return chartAccount{kind: account}, nil
	}
	c := strings.Split(account, ":")
	switch {
	case len(c) == 3 && c[0] == "provider" && (c[2] == "balance" || c[2] == "reserve"):
		return chartAccount{kind: "provider:" + c[2], part: c[1]}, nil
	case len(c) == 3 && c[0] == "expenses" && (c[1] == "fees" || c[1] == "discounts"):
		return chartAccount{kind: "expenses:" + c[1], part: c[2]}, nil
	case len(c) == 3 && c[0] == "receivable" && c[1] == "disputes":
		return chartAccount{kind: "receivable:disputes", part: c[2]}, nil
	case len(c) == 2 && c[0] == "bank":
		return chartAccount{kind: "bank:name", part: c[1]}, nil
	case len(c) == 3 && c[0] == "suspense" && c[1] == "bank":
		return chartAccount{kind: "suspense:bank", part: c[2]}, nil
	}
	return chartAccount{}, errors.New("not an account of the chart (docs/reference.md, Money and accounts)")
}

// ledgerNames are the default names in beancount and hledger (the same:
// hledger reads beancount's names, and infers the account types from
// their roots). %s is the variable part.
var ledgerNames = map[string]string{
	ledger.RevenueSales:    "Income:Sales",
	ledger.RevenueRefunds:  "Income:Refunds",
	ledger.ExpensesDispute: "Expenses:Disputes",
	"expenses:writeoffs":   "Expenses:Writeoffs",
	ledger.BankPayouts:     "Assets:Bank:Payouts",
	OpeningBalances:        "Equity:Opening-Balances",
	"fx:trading":           "Equity:FX-Trading",
	"provider:balance":     "Assets:Provider:%s:Balance",
	"provider:reserve":     "Assets:Provider:%s:Reserve",
	"expenses:fees":        "Expenses:Fees:%s",
	"expenses:discounts":   "Expenses:Discounts:%s",
	"receivable:disputes":  "Assets:Receivable:Disputes:%s",
	"bank:name":            "Assets:Bank:%s",
	"suspense:bank":        "Liabilities:Suspense:Bank:%s",
}

// quickBooksNames are the default QuickBooks Online names (Parent:Sub).
var quickBooksNames = map[string]string{
	ledger.RevenueSales:    "Sales",
	ledger.RevenueRefunds:  "Refunds",
	ledger.ExpensesDispute: "Dispute Losses",
	"expenses:writeoffs":   "Write-offs",
	ledger.BankPayouts:     "Payouts in Transit",
	OpeningBalances:        "Opening Balance Equity",
	"fx:trading":           "FX Trading",
	"provider:balance":     "Payment Processors:%s Balance",
	"provider:reserve":     "Payment Processors:%s Reserve",
	"expenses:fees":        "Merchant Fees:%s",
	"expenses:discounts":   "Discounts Given:%s",
	"receivable:disputes":  "Disputes Receivable:%s",
	"bank:name":            "Bank:%s",
	"suspense:bank":        "Bank Suspense:%s",
}

// xeroCodes are the default Xero account codes: fixed accounts take
// numbers near Xero's demo chart; per-provider ones the provider's number
// (providerCodes) after their group's; a bank account its name (xeroPart).
var xeroCodes = map[string]string{
	ledger.RevenueSales:    "200",
	ledger.RevenueRefunds:  "205",
	ledger.ExpensesDispute: "415",
	"expenses:writeoffs":   "416",
	ledger.BankPayouts:     "095",
	OpeningBalances:        "3000",
	"fx:trading":           "3100",
	"provider:balance":     "11%s",
	"provider:reserve":     "12%s",
	"receivable:disputes":  "13%s",
	"expenses:fees":        "61%s",
	"expenses:discounts":   "62%s",
	"bank:name":            "B%s",
	"suspense:bank":        "S%s",
}

// xeroPart spells a variable part within Xero's 10 characters: itself,
// upper-cased, when it is at most n letters and digits; else the first n
// hex digits of its SHA-256, so that every bank account and provider has a
// valid code by default (docs/accountants.md lists them; an override gives
// a readable one).
func xeroPart(s string, n int) string {
	if len(s) <= n && xeroCode.MatchString(s) {
		return strings.ToUpper(s)
	}
	sum := sha256.Sum256([]byte(s))
	return strings.ToUpper(hex.EncodeToString(sum[:]))[:n]
}

func defaultName(f Format, account string) (string, error) {
	a, err := parse(account)
	if err != nil {
		return "", err
	}
	var pattern, part string
	switch f {
	case Beancount, Hledger:
		pattern = ledgerNames[a.kind]
		if a.part != "" {
			if part, err = capitalised(a.part); err != nil {
				return "", err
			}
		}
	case QuickBooks:
		pattern = quickBooksNames[a.kind]
		if a.part != "" {
			if part, err = capitalised(a.part); err != nil {
				return "", err
			}
		}
	case Xero:
		pattern = xeroCodes[a.kind]
		switch {
		case a.part == "":
		case a.kind == "bank:name" || a.kind == "suspense:bank":
			part = xeroPart(a.part, 9)
		default:
			var ok bool
			if part, ok = providerCodes[a.part]; !ok {
				part = xeroPart(a.part, 8)
			}
		}
	default:
		return "", fmt.Errorf("unknown format %q", f)
	}
	if a.part == "" {
		return pattern, nil
	}
	return fmt.Sprintf(pattern, part), nil
}

// beancountComponent: beancount's account components start with a capital
// letter or a digit and hold letters, digits and '-' (no '_', no space).
var beancountComponent = regexp.MustCompile(`^[A-Z0-9][A-Za-z0-9-]*$`)

// beancountRoots are beancount's five account types.
var beancountRoots = map[string]bool{"Assets": true, "Liabilities": true, "Equity": true, "Income": true, "Expenses": true}

// xeroCode: Xero's account codes are up to 10 letters and digits.
var xeroCode = regexp.MustCompile(`^[A-Za-z0-9]{1,10}$`)

func valid(f Format, name string) error {
	switch f {
	case Beancount:
		c := strings.Split(name, ":")
		if !beancountRoots[c[0]] {
			return errors.New("beancount accounts start with Assets, Liabilities, Equity, Income or Expenses")
		}
		if len(c) < 2 {
			return errors.New("beancount accounts have a component after the root")
		}
		for _, p := range c[1:] {
			if !beancountComponent.MatchString(p) {
				return fmt.Errorf("component %q: beancount components start with a capital letter or digit and hold letters, digits and -", p)
			}
		}
	case Hledger:
		// hledger ends an account name at two spaces or a tab, and
		// reads ';' as a comment.
		if name == "" || strings.Contains(name, "  ") || strings.ContainsAny(name, "\t\r\n;") ||
			strings.HasPrefix(name, " ") || strings.HasSuffix(name, " ") ||
			strings.HasPrefix(name, ":") || strings.HasSuffix(name, ":") {
			return errors.New("hledger account names hold no tab, ';', double space, and no leading or trailing space or ':'")
		}
	case Xero:
		if !xeroCode.MatchString(name) {
			return errors.New("Xero account codes are 1 to 10 letters and digits")
		}
	case QuickBooks:
		if csvexport.Neutralize(name) != name {
			// The CSV would carry it with a quote in front (a
			// spreadsheet would run it as a formula): an account
			// QuickBooks does not have.
			return errors.New("QuickBooks names here do not start with =, +, -, @ or a tab")
		}
		for _, p := range strings.Split(name, ":") {
			if strings.TrimSpace(p) == "" || p != strings.TrimSpace(p) || strings.ContainsAny(p, "\"\t\r\n") || len(p) > 100 {
				return errors.New("QuickBooks names are Parent:Sub parts, each 1 to 100 characters with no quote, tab or line break and no surrounding space")
			}
		}
	default:
		return fmt.Errorf("unknown format %q", f)
	}
	return nil
}
