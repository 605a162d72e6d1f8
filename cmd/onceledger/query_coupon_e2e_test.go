package main_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/askers"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi"
	"github.com/onceledger/onceledger/adapters/providers/alipay/alipayapi/alipayfake"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi/wechatpayfake"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
)

// The seam of issues 34 and 36 through HTTP, on both stores: a couponed
// payment learned by asking the provider (the API doubles), by its signed
// notification and by the bill, in each order, is one capture with its
// discount, posted once.
//
// Alipay: total 100.00, receipt_amount 80.00, a 20.00 merchant voucher
// (voucher_detail_list; fund_bill_list MDISCOUNT): the answer's lists are
// arrays, the notification's JSON text in camelCase, as each is sent.
// WeChat Pay: amount.total 10000, payer_total 9000, promotion_detail NOCASH
// 1000 (the answer plaintext, the notification's resource encrypted).
// For each provider three payments: query then notification; notification
// then query; trade bill, then query, then notification. And an Alipay
// trade whose answer and notification carry neither receipt_amount nor
// fund_bill_list (both optional): the voucher list alone tells the coupon.
func TestCouponedPaymentLearnedByQueryNotificationAndBillIsOneCapture(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, keys, fakes := cnQueryStackOn(t, kind)
			q := s.app.Querier("seam-"+string(kind), nil)
			ask := func(provider, reference string) {
				t.Helper()
				out, err := q.Ask(ctx, provider, reference)
				require.NoError(t, err)
				require.Equal(t, expectations.OutcomePaid, out, "%s %s", provider, reference)
			}
			// The shop registers each order at its total (coupons
			// included): paid, no amount_mismatch.
			var expected []uuid.UUID
			expect := func(provider, reference string, amount int64) {
				t.Helper()
				x, _, err := s.app.Expectations().Register(ctx, expectation.RegisterCommand{Provider: provider, Reference: reference,
					Amount: amount, Currency: "CNY", ExpiresAt: time.Now().Add(time.Hour), Actor: "shop"})
				require.NoError(t, err)
				expected = append(expected, x.ID)
			}

			aliTrades := alipaySeam(t, s, keys, fakes.alipay, ask, expect)
			wxTxs := wechatSeam(t, s, keys, fakes.wechatpay, ask, expect)
			m := s.app.ExpectationManager("seam-" + string(kind))
			require.NoError(t, untilNil(ctx, func() error {
				if _, err := m.Step(ctx); err != nil {
					return err
				}
				for _, id := range expected {
					x, err := s.app.Expectations().Get(ctx, id)
					if err != nil {
						return err
					}
					if x.Status != expectation.StatusPaid {
						return fmt.Errorf("%s %s is %s", x.Provider, x.Reference, x.Status)
					}
				}
				return nil
			}))

			s.projectedToHead()
			assert.Equal(t, map[string]int64{
				"revenue:sales|CNY":                -70000,
				"provider:alipay:balance|CNY":      4*8000 - 48,
				"expenses:discounts:alipay|CNY":    4 * 2000,
				"expenses:fees:alipay|CNY":         48,
				"provider:wechatpay:balance|CNY":   3*9000 - 54,
				"expenses:discounts:wechatpay|CNY": 3 * 1000,
				"expenses:fees:wechatpay|CNY":      54,
			}, s.readBalances(), "each payment once, with its coupon")
			for _, trade := range aliTrades {
				assert.Equal(t, []string{payment.TypeCaptured}, onlyCaptures(s.streamTypesOf("payment-alipay-"+trade)), trade)
			}
			for _, tx := range wxTxs {
				assert.Equal(t, []string{payment.TypeCaptured}, onlyCaptures(s.streamTypesOf("payment-wechatpay-"+tx)), tx)
			}
			for _, kind := range []string{"conflicting_redelivery", "amount_mismatch", "settlement_mismatch", "missing_webhook", "fee_mismatch"} {
				assert.Empty(t, s.openItems(kind), kind)
			}
		})
	}
}

// alipaySeam tells four couponed Alipay trades, each in its order (see
// TestCouponedPaymentLearnedByQueryNotificationAndBillIsOneCapture), and
// returns their trade_no by order.
func alipaySeam(t *testing.T, s *stack, keys [3]*rsa.PrivateKey, fake *alipayfake.Fake, ask func(provider, reference string), expect func(provider, reference string, amount int64)) map[string]string {
	aliNotify := func(trade, ref string) {
		t.Helper()
		p := map[string]string{
			"out_trade_no": ref, "total_amount": "100.00", "receipt_amount": "80.00", "buyer_pay_amount": "80.00",
			"gmt_payment":         "2026-12-07 10:00:05",
			"voucher_detail_list": `[{"amount":"20.00","merchantContribute":"20.00","name":"满100减20","otherContribute":"0.00","type":"ALIPAY_BIZ_VOUCHER","voucherId":"V-` + trade + `"}]`,
			"fund_bill_list":      `[{"amount":"80.00","fundChannel":"ALIPAYACCOUNT"},{"amount":"20.00","fundChannel":"MDISCOUNT"}]`}
		if strings.Contains(ref, "vouchers-only") {
			// receipt_amount and the fund bills are optional:
			// the voucher list alone tells the coupon.
			p["receipt_amount"], p["buyer_pay_amount"], p["fund_bill_list"] = "", "", ""
		}
		body := alipayBody(t, keys[0], alipayNotification("n-"+trade, trade, "TRADE_SUCCESS", p))
		ans := s.post("/webhooks/alipay", http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}, body)
		require.Equal(t, http.StatusOK, ans.Status, ans.Body)
		require.Equal(t, "success", ans.Body)
	}
	aliTrades := map[string]string{}
	for _, order := range []string{"query-first", "notification-first", "bill-first", "vouchers-only"} {
		trade := uniqCN("2026120722001")
		ref := "ORDER-" + order + "-" + trade
		if order == "bill-first" {
			ref = "O" + trade // the bill's 商户订单号 (alipayTradeBill): the out_trade_no
		}
		aliTrades[order] = trade
		ft := alipayfake.Trade{TradeNo: trade, Status: "TRADE_SUCCESS", TotalAmount: "100.00",
			ReceiptAmount: "80.00", SendPayDate: "2026-12-07 10:00:05",
			Vouchers: []map[string]string{{"id": "V-" + trade, "name": "满100减20", "type": "ALIPAY_BIZ_VOUCHER", "amount": "20.00",
				"merchant_contribute": "20.00", "other_contribute": "0.00"}},
			FundBills: []map[string]string{{"fund_channel": "ALIPAYACCOUNT", "amount": "80.00", "real_amount": "80.00"},
				{"fund_channel": "MDISCOUNT", "amount": "20.00"}}}
		if order == "vouchers-only" {
			ft.NoReceiptAmount, ft.FundBills = true, nil
		}
		fake.SetTrade(ref, ft)
		expect(alipay.Name, ref, 10000)
		switch order {
		case "query-first", "vouchers-only":
			ask(alipay.Name, ref)
			aliNotify(trade, ref)
		case "notification-first":
			aliNotify(trade, ref)
			ask(alipay.Name, ref)
		case "bill-first":
			s.upload(t, "alipay", alipayTradeBill(t, [7]string{trade, "交易", "100.00", "80.00", "20.00", "", "-0.48"}))
			ask(alipay.Name, ref)
			aliNotify(trade, ref)
		}
		ask(alipay.Name, ref) // asked again: a duplicate at the gate
	}
	return aliTrades
}

// wechatSeam tells three WeChat Pay payments with a NOCASH coupon, each in
// its order, and returns their transaction_id by order.
func wechatSeam(t *testing.T, s *stack, keys [3]*rsa.PrivateKey, fake *wechatpayfake.Fake, ask func(provider, reference string), expect func(provider, reference string, amount int64)) map[string]string {
	promo := []map[string]any{{"coupon_id": "109519", "name": "免充值券", "scope": "SINGLE", "type": "NOCASH", "amount": 1000,
		"stock_id": "931386", "wechatpay_contribute": 0, "merchant_contribute": 1000, "other_contribute": 0, "currency": "CNY"}}
	wxNotify := func(tx, ref string) {
		t.Helper()
		c := wxTransaction(tx, 10000)
		c["out_trade_no"], c["success_time"] = ref, "2026-12-07T18:00:05+08:00"
		c["amount"] = map[string]any{"total": 10000, "payer_total": 9000, "currency": "CNY", "payer_currency": "CNY"}
		c["promotion_detail"] = promo
		s.wechatNotify(t, keys, "n-"+tx, "TRANSACTION.SUCCESS", c)
	}
	wxTxs := map[string]string{}
	for _, order := range []string{"query-first", "notification-first", "bill-first"} {
		tx := uniqCN("42000020261207")
		ref := "wx-" + order + "-" + tx
		wxTxs[order] = tx
		fake.SetTransaction(ref, wechatpayfake.Transaction{TransactionID: tx, State: "SUCCESS", Total: 10000,
			PayerTotal: 9000, SuccessTime: "2026-12-07T18:00:05+08:00", Promotions: promo})
		expect(wechatpay.Name, ref, 10000)
		switch order {
		case "query-first":
			ask(wechatpay.Name, ref)
			wxNotify(tx, ref)
		case "notification-first":
			wxNotify(tx, ref)
			ask(wechatpay.Name, ref)
		case "bill-first":
			bt := func(cells ...string) string { return "`" + strings.Join(cells, ",`") + "\r\n" }
			var tb strings.Builder
			tb.WriteString("\uFEFF交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\r\n")
			tb.WriteString(bt("2026-12-07 18:00:05", "wx2421b1c4370ec43b", cnMchID, "0", "", tx, ref, "oUpF8uMu", "JSAPI", "SUCCESS", "OTHERS", "CNY",
				"90.00", "10.00", "0", "0", "0.00", "0.00", "", "", "商品", "", "0.54000", "0.60%", "100.00", "0.00", ""))
			tb.WriteString("总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\r\n")
			tb.WriteString(bt("1", "90.00", "0.00", "0.00", "0.54000", "100.00", "0.00"))
			s.upload(t, "wechatpay", []byte(tb.String()))
			ask(wechatpay.Name, ref)
			wxNotify(tx, ref)
		}
		ask(wechatpay.Name, ref)
	}
	return wxTxs
}

func (s *stack) streamTypesOf(stream string) []string { return streamTypes(s.t, s.store, stream) }

// onlyCaptures keeps the Captured events of a stream's types.
func onlyCaptures(types []string) []string {
	var out []string
	for _, ty := range types {
		if ty == payment.TypeCaptured {
			out = append(out, ty)
		}
	}
	return out
}

// cnFakes are the providers' API doubles a cnQueryStack asks.
type cnFakes struct {
	alipay    *alipayfake.Fake
	wechatpay *wechatpayfake.Fake
}

// cnQueryStackOn is cnSettleStackOn with Alipay and WeChat Pay asked: their
// API doubles on loopback, the clients serve builds, answers verified with
// the doubles' keys beside the notifications'.
func cnQueryStackOn(t *testing.T, kind eventStoreKind) (*stack, [3]*rsa.PrivateKey, cnFakes) {
	t.Helper()
	keys, err := cnKeys()
	require.NoError(t, err)
	dir := t.TempDir()
	privPEM := func(name string) (*rsa.PrivateKey, string, []byte) {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		der, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		b := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b, 0o600))
		return k, path, b
	}

	appKey, appKeyPath, _ := privPEM("alipay-app.pem")
	aliFake, err := alipayfake.New(cnAppID, &appKey.PublicKey)
	require.NoError(t, err)
	aliGW := httptest.NewServer(aliFake)
	t.Cleanup(aliGW.Close)
	aliFakeKey := filepath.Join(dir, "alipay-api.pem")
	require.NoError(t, os.WriteFile(aliFakeKey, aliFake.PublicKeyPEM(), 0o600))

	const serial = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
	mchKey, _, mchPEM := privPEM("wechatpay-merchant.pem")
	wxFake, err := wechatpayfake.New(cnMchID, serial, &mchKey.PublicKey)
	require.NoError(t, err)
	wxAPI := httptest.NewServer(wxFake)
	t.Cleanup(wxAPI.Close)

	set := registry.NewSet()
	ali := set.Config(alipay.Name).(*alipay.Config)
	ali.PublicKeys, ali.AppIDs = []string{pemFile(t, dir, "alipay.pem", keys[0]), aliFakeKey}, []string{cnAppID}
	wx := set.Config(wechatpay.Name).(*wechatpay.Config)
	wx.Keys = []string{cnPubKeyID + "=" + pemFile(t, dir, "wechatpay.pem", keys[1])}
	wx.APIv3Keys, wx.MchIDs = []string{cnAPIv3Key}, []string{cnMchID}
	require.NoError(t, set.Check())
	unknown := app.NewUnknownKeys(testLogger())
	provs, err := set.Adapters(providers.Settings{Tolerance: 5 * time.Minute, UnknownKey: unknown.Report})
	require.NoError(t, err)

	aliClient, err := alipayapi.Config{AppPrivateKey: appKeyPath, Gateway: aliGW.URL + "/gateway.do"}.Client(ali.PublicKeys, ali.AppIDs)
	require.NoError(t, err)
	platform := map[string][]byte{wechatpayfake.KeyID: wxFake.PublicKeyPEM()}
	wxClient, err := wechatpayapi.New(wxAPI.URL, cnMchID, serial, mchPEM, platform, nil)
	require.NoError(t, err)
	// The asker's adapter reads answers as notifications under the
	// configured APIv3 key, as serve's does (cmd/onceledger/ask.go).
	wxAdapter, err := wechatpay.New(platform, [][]byte{[]byte(cnAPIv3Key)}, []string{cnMchID}, 0)
	require.NoError(t, err)

	cfg := app.Config{
		DatabaseURL: pgtest.NewDatabase(t), Providers: provs, UnknownKeys: unknown,
		APITokens: []string{settleReadToken}, AdminTokens: []string{"accountant=" + settleToken}, MaxBodyBytes: maxBody, Logger: testLogger(),
		IngestTimeout: 10 * time.Second, ProviderConcurrency: -1,
		Askers: map[string]expectations.Asker{
			alipay.Name:    askers.Alipay{Client: aliClient, AppID: cnAppID},
			wechatpay.Name: askers.WechatPay{Client: wxClient, Adapter: wxAdapter},
		},
	}
	if kind == onESDB {
		cfg.EventStore = esdbfake.Start(t).URL()
	}
	a := newApp(t, cfg)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = projections.NewService(a.Events().Store, readmodel.New(a.Pool()), testLogger()).Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &stack{t: t, kind: kind, dbURL: cfg.DatabaseURL, app: a, pool: a.Pool(), srv: srv, store: a.Events().Store}, keys, cnFakes{aliFake, wxFake}
}
