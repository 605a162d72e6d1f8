package assertion_test

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/domain/assertion"
)

// The grammar ProviderOf parses by hand (its comment), as it was written
// before: the regular expressions are the specification.
var (
	providerAccount = regexp.MustCompile(`^provider:([a-z0-9][a-z0-9_-]*):(balance|reserve)$`)
	batchAccount    = regexp.MustCompile(`^provider:([a-z0-9][a-z0-9_-]*):batch:([^\s]+)$`)
	bankAccount     = regexp.MustCompile(`^bank:([A-Za-z0-9][A-Za-z0-9_.-]*)$`)
)

func providerOfByGrammar(account string) (string, bool) {
	if m := providerAccount.FindStringSubmatch(account); m != nil {
		return m[1], true
	}
	if m := batchAccount.FindStringSubmatch(account); m != nil {
		return m[1], true
	}
	if bankAccount.MatchString(account) && account != "bank:payouts" {
		return assertion.BankProvider, true
	}
	return "", false
}

// TestProviderOfIsItsGrammar: the hand parser answers as the regular
// expressions for accounts built from the grammar's pieces and its edges
// (empty names, a leading '-' or '.', upper case in a provider's name,
// white space and invalid UTF-8 in a batch id, bank:payouts).
func TestProviderOfIsItsGrammar(t *testing.T) {
	pieces := []string{"provider:", "bank:", "batch:", ":", "balance", "reserve", "payouts", "stripe", "adyen",
		"ING-EUR.1", "a", "Z", "9", "_", "-", ".", "/", " ", "\t", "\n", "\f", "\r", "\v", "\xff", "é", "fees", ""}
	r := rand.New(rand.NewPCG(40, 35))
	cases := []string{"provider:stripe:balance", "provider:adyen:reserve", "provider:adyen:batch:M/41/EUR", "bank:main",
		"bank:payouts", "bank:", "bank:a/b", "provider::balance", "provider:-x:balance", "provider:Stripe:balance",
		"provider:x:batch:", "provider:x:batch: ", "provider:x:batch:a\vb", "provider:x:batch:\xff", "bank:.x", "bank:x.",
		"provider:x:balance:", "provider:x:balancex", "revenue:sales"}
	some := func(max int) string {
		var b strings.Builder
		for range r.IntN(max + 1) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 100_000 {
		cases = append(cases, some(6), // anything
			"provider:"+some(2)+":"+[]string{"balance", "reserve", "batch:"}[r.IntN(3)]+some(2), // near a provider's
			"bank:"+some(3)) // near a bank's
	}
	matched := map[string]int{} // accepted, by the expression that accepts
	for _, account := range cases {
		wantP, wantOK := providerOfByGrammar(account)
		p, ok := assertion.ProviderOf(account)
		if !assert.Equal(t, wantOK, ok, "%q", account) || !assert.Equal(t, wantP, p, "%q", account) {
			return
		}
		if !assert.Equal(t, batchAccount.MatchString(account), assertion.IsBatchAccount(account), "%q", account) {
			return
		}
		switch {
		case providerAccount.MatchString(account):
			matched["balance"]++
		case batchAccount.MatchString(account):
			matched["batch"]++
		case ok:
			matched["bank"]++
		}
	}
	for _, kind := range []string{"balance", "batch", "bank"} {
		assert.Greater(t, matched[kind], 100, "generated accounts the grammar accepts as %s", kind)
	}
}
