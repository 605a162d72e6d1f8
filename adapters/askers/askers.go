// Package askers are the expectation asker's questions to each provider's
// API (expectations.Asker): Stripe's PaymentIntent, Alipay's
// alipay.trade.query and WeChat Pay's transaction by out_trade_no, over
// the API clients settle sync and backfill use (stripeapi, alipayapi,
// wechatpayapi). Each verifies the answer as its client does and turns a
// paid one into the very delivery the payment's webhook would have been
// (the provider package's own decoder and normalizer), so that whichever
// of answer, webhook and bill comes first, the fact is recorded once.
// Adyen, PayPal, Square and Circle are not asked.
package askers

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
)

// Alipay asks alipay.trade.query by out_trade_no.
type Alipay struct {
	Client *alipayapi.Client
	AppID  string // recorded as the notification's app_id
}

var _ expectations.Asker = Alipay{}

// Ask implements expectations.Asker. ACQ.TRADE_NOT_EXIST (the buyer has
// not opened the cashier yet) and WAIT_BUYER_PAY ask again; a closed unpaid
// trade stops the asking; an answer whose sign does not verify is forged.
func (a Alipay) Ask(ctx context.Context, outTradeNo string) (expectations.Answer, error) {
	raw, err := a.Client.TradeQuery(ctx, outTradeNo)
	var apiErr *alipayapi.APIError
	var rl *alipayapi.RateLimitedError
	switch {
	case errors.As(err, &rl):
		return expectations.Answer{}, &expectations.RetryAfterError{After: rl.RetryAfter, Err: err}
	case errors.Is(err, alipayapi.ErrSignature):
		return expectations.Answer{}, fmt.Errorf("%w: %w", expectations.ErrForged, err)
	case errors.As(err, &apiErr) && apiErr.SubCode == "ACQ.TRADE_NOT_EXIST":
		return expectations.Answer{Outcome: expectations.OutcomeNotExist}, nil
	case err != nil:
		return expectations.Answer{}, err
	}
	q, err := alipay.Query(a.AppID, raw)
	if err != nil {
		return expectations.Answer{}, err
	}
	switch q.State {
	case alipay.QueryPaid:
		return expectations.Answer{Outcome: expectations.OutcomePaid, Event: q.Event}, nil
	case alipay.QueryClosed:
		return expectations.Answer{Outcome: expectations.OutcomeClosed}, nil
	}
	return expectations.Answer{Outcome: expectations.OutcomePending}, nil
}
