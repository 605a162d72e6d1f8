package stripeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

// Balance reads GET /v1/balance (https://docs.stripe.com/api/balance/balance_retrieve)
// and states, per currency, available + pending in ISO minor units as of
// at (the moment of the request: the Balance object carries no time of its
// own), as the balance of provider:stripe:balance. Stripe's docs describe
// `available` as funds that can be paid out and `pending` as funds not yet
// available; together they are what Stripe holds for the merchant, the
// ledger's provider balance. Connect reserves and instant-available
// amounts are not in them: the page is silent on how they relate to the
// balance transactions, so an account using them may see differences.
func (c *Client) Balance(ctx context.Context, at time.Time) ([]report.Stated, error) {
	body, err := c.get(ctx, "/v1/balance", nil)
	if err != nil {
		return nil, err
	}
	var b struct {
		Object    string `json:"object"`
		Available []struct {
			Amount   int64  `json:"amount"`
			Currency string `json:"currency"`
		} `json:"available"`
		Pending []struct {
			Amount   int64  `json:"amount"`
			Currency string `json:"currency"`
		} `json:"pending"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Object != "balance" {
		return nil, fmt.Errorf("stripe api: GET /v1/balance: not a balance object (%v)", err)
	}
	sums := map[money.Currency]int64{}
	var order []money.Currency
	add := func(amount int64, cur string) error {
		c, err := money.ParseCurrency(cur)
		if err != nil {
			return fmt.Errorf("stripe api: GET /v1/balance: %w", err)
		}
		v, err := money.StripeAPI.ToISO(amount, c)
		if err != nil {
			return fmt.Errorf("stripe api: GET /v1/balance: %w", err)
		}
		if _, ok := sums[c]; !ok {
			order = append(order, c)
		}
		if sums[c], err = money.Add(sums[c], v); err != nil {
			return fmt.Errorf("stripe api: GET /v1/balance: %w", err)
		}
		return nil
	}
	for _, a := range b.Available {
		if err := add(a.Amount, a.Currency); err != nil {
			return nil, err
		}
	}
	for _, a := range b.Pending {
		if err := add(a.Amount, a.Currency); err != nil {
			return nil, err
		}
	}
	out := make([]report.Stated, len(order))
	for i, c := range order {
		out[i] = report.Stated{Account: ledger.ProviderBalance("stripe"), Currency: c, AsOf: at.UTC(), Amount: sums[c],
			Source: "stripe GET /v1/balance"}
	}
	return out, nil
}
