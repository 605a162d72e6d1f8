package askers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
)

// WechatPay asks GET /v3/pay/transactions/out-trade-no/{out_trade_no} as
// the direct merchant of Client, or, for a reference
// "{sub_mchid}/{out_trade_no}" (a service provider's: an out_trade_no is
// unique within one sub-merchant only), the partner variant
// /v3/pay/partner/transactions/out-trade-no/{out_trade_no}?sp_mchid=&sub_mchid=.
// Adapter is the webhook adapter whose code reads the answer (its APIv3
// key seals it into the notification's envelope).
type WechatPay struct {
	Client  *wechatpayapi.Client
	Adapter *wechatpay.Adapter
}

var _ expectations.Asker = WechatPay{}

// Ask implements expectations.Asker: SUCCESS and REFUND are paid (a
// capture only), NOTPAY and USERPAYING ask again, CLOSED, REVOKED and
// PAYERROR stop; 404 ORDER_NOT_EXIST asks again.
func (w WechatPay) Ask(ctx context.Context, reference string) (expectations.Answer, error) {
	sub, outTradeNo := "", reference
	if s, no, ok := strings.Cut(reference, "/"); ok {
		sub, outTradeNo = s, no
	}
	raw, err := w.Client.Transaction(ctx, outTradeNo, sub)
	var apiErr *wechatpayapi.APIError
	var rl *wechatpayapi.RateLimitedError
	switch {
	case errors.As(err, &rl):
		return expectations.Answer{}, &expectations.RetryAfterError{After: rl.RetryAfter, Err: err}
	case errors.Is(err, wechatpayapi.ErrSignature):
		return expectations.Answer{}, fmt.Errorf("%w: %w", expectations.ErrForged, err)
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound && apiErr.Code == "ORDER_NOT_EXIST":
		return expectations.Answer{Outcome: expectations.OutcomeNotExist}, nil
	case err != nil:
		return expectations.Answer{}, err
	}
	q, err := w.Adapter.Query(raw)
	if err != nil {
		return expectations.Answer{}, err
	}
	switch q.State {
	case wechatpay.QueryPaid:
		return expectations.Answer{Outcome: expectations.OutcomePaid, Event: q.Event}, nil
	case wechatpay.QueryClosed:
		return expectations.Answer{Outcome: expectations.OutcomeClosed}, nil
	}
	return expectations.Answer{Outcome: expectations.OutcomePending}, nil
}
