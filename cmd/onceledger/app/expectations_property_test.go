package app_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi/stripefake"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/settlement"
	"github.com/onceledger/onceledger/projections/outbound"
)

// channels are one provider's ways of telling payment i's capture: the
// answer to a query (through the querier and the webhook gate), its
// webhook (each copy the same delivery), and, where the test writes the
// provider's bill, a bill holding some payments' lines.
type channels struct {
	provider string
	ref      func(i int) string
	query    func(t *testing.T, i int) delivery.Event
	webhook  func(t *testing.T, i int) delivery.Event
	bill     func(t *testing.T, is []int) []byte // nil: no bill for this provider
}

func amountOf(i int) int64 { return int64(1000 + 100*i) }

// couponOf is payment i's merchant-funded coupon (Alipay's merchant
// voucher, WeChat Pay's NOCASH coupon): every other payment has one of a
// fifth of its amount, told alike by the answer, the notification and the
// bill (issues 34 and 36: one fact, its discount included).
func couponOf(i int) int64 {
	if i%2 == 1 {
		return amountOf(i) / 5
	}
	return 0
}

// alipayChannels: the query answer is alipay.Query's reading of an
// alipay.trade.query answer; the notification is normalized by the
// adapter from its form (Renormalize: its signature is the webhook path's,
// tested there); the bill is the trade bill (UTF-8, fee 0).
func alipayChannels() channels {
	trade := func(i int) string { return fmt.Sprintf("202612012200140%05d", i) }
	ad := &alipay.Adapter{}
	return channels{
		provider: "alipay",
		ref:      func(i int) string { return fmt.Sprintf("ORDER-%d", i) },
		query: func(t *testing.T, i int) delivery.Event {
			answer := map[string]any{"code": "10000", "trade_no": trade(i), "out_trade_no": fmt.Sprintf("ORDER-%d", i),
				"trade_status": "TRADE_SUCCESS", "total_amount": yuan(amountOf(i)), "receipt_amount": yuan(amountOf(i) - couponOf(i)),
				"send_pay_date": "2026-12-01 10:00:05"}
			if c := couponOf(i); c > 0 {
				// The answer's lists: arrays, snake_case (query_options).
				answer["voucher_detail_list"] = []map[string]string{{"id": fmt.Sprintf("V%d", i), "name": "商家券", "type": "ALIPAY_BIZ_VOUCHER",
					"amount": yuan(c), "merchant_contribute": yuan(c), "other_contribute": "0.00"}}
				answer["fund_bill_list"] = []map[string]string{{"fund_channel": "ALIPAYACCOUNT", "amount": yuan(amountOf(i) - c)},
					{"fund_channel": "MDISCOUNT", "amount": yuan(c)}}
			}
			ans, err := json.Marshal(answer)
			require.NoError(t, err)
			q, err := alipay.Query("2021000000000001", ans)
			require.NoError(t, err)
			return q.Event
		},
		webhook: func(t *testing.T, i int) delivery.Event {
			form := url.Values{"notify_id": {"notify-" + strconv.Itoa(i)}, "notify_time": {"2026-12-01 10:00:06"},
				"notify_type": {"trade_status_sync"}, "app_id": {"2021000000000001"}, "charset": {"utf-8"}, "trade_no": {trade(i)},
				"out_trade_no": {fmt.Sprintf("ORDER-%d", i)}, "trade_status": {"TRADE_SUCCESS"}, "total_amount": {yuan(amountOf(i))},
				"receipt_amount": {yuan(amountOf(i) - couponOf(i))}, "gmt_payment": {"2026-12-01 10:00:05"}}
			if c := couponOf(i); c > 0 {
				// The notification's lists: JSON text, camelCase.
				form.Set("voucher_detail_list", fmt.Sprintf(`[{"amount":"%s","merchantContribute":"%s","name":"商家券","otherContribute":"0.00","type":"ALIPAY_BIZ_VOUCHER","voucherId":"V%d"}]`,
					yuan(c), yuan(c), i))
				form.Set("fund_bill_list", fmt.Sprintf(`[{"amount":"%s","fundChannel":"ALIPAYACCOUNT"},{"amount":"%s","fundChannel":"MDISCOUNT"}]`,
					yuan(amountOf(i)-c), yuan(c)))
			}
			ev, err := ad.Renormalize("", []byte(form.Encode()))
			require.NoError(t, err)
			return ev
		},
		bill: func(t *testing.T, is []int) []byte {
			var b strings.Builder
			b.WriteString("\uFEFF#支付宝业务明细查询\n#账号：[20885318916687390156]\n#起始日期：[2026年12月01日 00:00:00]   终止日期：[2026年12月02日 00:00:00]\n")
			b.WriteString("#-----------------------------------------业务明细列表----------------------------------------\n")
			b.WriteString("支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注\n")
			var total, coupons int64
			for _, i := range is {
				total += amountOf(i) - couponOf(i)
				coupons += couponOf(i)
				fmt.Fprintf(&b, "%s\t,ORDER-%d\t,交易\t,咖啡\t,2026-12-01 10:00:01\t,2026-12-01 10:00:05\t,\t,\t,\t,\t,138****0001\t,%s\t,%s\t,0.00\t,0.00\t,0.00\t,%s\t,0.00\t,\t,0.00\t,0.00\t,\t,0.00\t,0.00\t,\n",
					trade(i), i, yuan(amountOf(i)), yuan(amountOf(i)-couponOf(i)), yuan(couponOf(i)))
			}
			b.WriteString("#-----------------------------------------业务明细列表结束------------------------------------\n")
			fmt.Fprintf(&b, "#交易合计：%d笔，商家实收共%s元，商家优惠共%s元\n#退款合计：0笔，商家实收共0.00元，商家优惠共0.00元\n#导出时间：[2026年12月02日 10:05:12]\n", len(is), yuan(total), yuan(coupons))
			return []byte(b.String())
		},
	}
}

const propAPIv3Key = "0123456789abcdefghijklmnopqrstuv"

// wechatChannels: the query answer through wechatpay's Query (sealed into
// the notification's envelope), the notification as WeChat Pay encrypts it
// (another id), opened by the adapter; the trade bill.
func wechatChannels(t *testing.T) channels {
	// A platform key is configured (the adapter needs one); nothing here
	// is signed: the signature is the webhook path's, tested there.
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	a, err := wechatpay.New(map[string][]byte{"PUB_KEY_ID_0114232134912410000000000000": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})},
		[][]byte{[]byte(propAPIv3Key)}, []string{"1900000109"}, 0)
	require.NoError(t, err)
	content := func(i int) []byte {
		c := map[string]any{"mchid": "1900000109", "appid": "wxd678efh567hg6787", "out_trade_no": fmt.Sprintf("WX-%d", i),
			"transaction_id": fmt.Sprintf("42000009912026%08d", i), "trade_type": "JSAPI", "trade_state": "SUCCESS",
			"success_time": "2026-12-01T18:00:05+08:00", "amount": map[string]any{"total": amountOf(i), "payer_total": amountOf(i) - couponOf(i), "currency": "CNY"}}
		if coupon := couponOf(i); coupon > 0 {
			// A merchant-funded no-cash coupon (免充值券), in the answer
			// and the notification alike.
			c["promotion_detail"] = []map[string]any{{"coupon_id": fmt.Sprintf("C%d", i), "name": "免充值券", "scope": "GLOBAL", "type": "NOCASH",
				"amount": coupon, "stock_id": "931386", "wechatpay_contribute": 0, "merchant_contribute": coupon, "other_contribute": 0, "currency": "CNY"}}
		}
		b, _ := json.Marshal(c)
		return b
	}
	return channels{
		provider: "wechatpay",
		ref:      func(i int) string { return fmt.Sprintf("WX-%d", i) },
		bill: func(t *testing.T, is []int) []byte {
			// The trade bill (交易账单, bill_type=ALL) as WeChat Pay writes it:
			// UTF-8 with BOM, backtick-prefixed fields, the summary row the
			// check (fee 0 here).
			var b strings.Builder
			b.WriteString("\uFEFF交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注\n")
			var total, settled int64
			for _, i := range is {
				total += amountOf(i)
				settled += amountOf(i) - couponOf(i)
				// 应结订单金额 = 订单金额 − 免充值券金额; 代金券金额 the coupon.
				fmt.Fprintf(&b, "`2026-12-01 18:00:05,`wxd678efh567hg6787,`1900000109,`0,`,`42000009912026%08d,`WX-%d,`oUpF8uMuAJO_M2pxb1Q9zNjWeS6o,`JSAPI,`SUCCESS,`CMB_DEBIT,`CNY,`%s,`%s,`0,`0,`0.00,`0.00,`,`,`咖啡,`,`0.00000,`0.60%%,`%s,`0.00,`\n",
					i, i, yuan(amountOf(i)-couponOf(i)), yuan(couponOf(i)), yuan(amountOf(i)))
			}
			b.WriteString("总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额\n")
			fmt.Fprintf(&b, "`%d,`%s,`0.00,`0.00,`0.00000,`%s,`0.00\n", len(is), yuan(settled), yuan(total))
			return []byte(b.String())
		},
		query: func(t *testing.T, i int) delivery.Event {
			q, err := a.Query(content(i))
			require.NoError(t, err)
			return q.Event
		},
		webhook: func(t *testing.T, i int) delivery.Event {
			block, err := aes.NewCipher([]byte(propAPIv3Key))
			require.NoError(t, err)
			gcm, err := cipher.NewGCM(block)
			require.NoError(t, err)
			nonce := "Kj7QIyUiYx1q"
			env, err := json.Marshal(map[string]any{"id": fmt.Sprintf("EV-%d", i), "create_time": "2026-12-01T18:00:06+08:00",
				"resource_type": "encrypt-resource", "event_type": "TRANSACTION.SUCCESS", "summary": "支付成功",
				"resource": map[string]string{"original_type": "transaction", "algorithm": "AEAD_AES_256_GCM", "associated_data": "transaction",
					"nonce": nonce, "ciphertext": base64.StdEncoding.EncodeToString(gcm.Seal(nil, []byte(nonce), content(i), []byte("transaction")))}})
			require.NoError(t, err)
			ev, err := a.Renormalize("", env)
			require.NoError(t, err)
			return ev
		},
	}
}

// stripeChannels: the retrieved PaymentIntent through stripe.Query, the
// payment_intent.succeeded webhook normalized by the adapter; a Balance
// Transactions list.
func stripeChannels() channels {
	pi := func(i int) map[string]any {
		return map[string]any{"id": fmt.Sprintf("pi_prop%d", i), "object": "payment_intent", "amount": amountOf(i),
			"amount_received": amountOf(i), "currency": "usd", "status": "succeeded", "created": 1764583200,
			"latest_charge": fmt.Sprintf("ch_prop%d", i)}
	}
	return channels{
		provider: "stripe",
		ref:      func(i int) string { return fmt.Sprintf("pi_prop%d", i) },
		bill: func(t *testing.T, is []int) []byte {
			// A Balance Transactions list (the API's list object), each
			// charge's source expanded with its PaymentIntent.
			var data []json.RawMessage
			for _, i := range is {
				data = append(data, stripefake.BalanceTransaction(settlement.Line{Provider: "stripe", Kind: settlement.KindCharge,
					LineID: fmt.Sprintf("txn_prop%d", i), PaymentKey: fmt.Sprintf("pi_prop%d", i), CaptureID: fmt.Sprintf("ch_prop%d", i),
					Gross: amountOf(i), Net: amountOf(i), Currency: "USD", OriginalAmount: amountOf(i), OriginalCurrency: "USD",
					OccurredAt: time.Unix(1764583205, 0).UTC()}))
			}
			b, err := json.Marshal(map[string]any{"object": "list", "url": "/v1/balance_transactions", "has_more": false, "data": data})
			require.NoError(t, err)
			return b
		},
		query: func(t *testing.T, i int) delivery.Event {
			p := pi(i)
			p["latest_charge"] = map[string]any{"id": p["latest_charge"], "object": "charge", "created": 1764583205}
			b, err := json.Marshal(p)
			require.NoError(t, err)
			q, err := stripe.Query(fmt.Sprintf("pi_prop%d", i), b)
			require.NoError(t, err)
			return q.Event
		},
		webhook: func(t *testing.T, i int) delivery.Event {
			b, err := json.Marshal(map[string]any{"id": fmt.Sprintf("evt_prop%d", i), "object": "event", "type": "payment_intent.succeeded",
				"created": 1764583206, "data": map[string]any{"object": pi(i)}})
			require.NoError(t, err)
			ev, err := (&stripe.Adapter{}).Renormalize("", b)
			require.NoError(t, err)
			return ev
		},
	}
}

func yuan(fen int64) string { return fmt.Sprintf("%d.%02d", fen/100, fen%100) }

// answering is the asker of a property run: it answers with the query's
// fact (the provider's own reading of its answer).
type answering struct {
	t  *testing.T
	ch channels
	by map[string]int
}

func (a answering) Ask(_ context.Context, ref string) (expectations.Answer, error) {
	return expectations.Answer{Outcome: expectations.OutcomePaid, Event: a.ch.query(a.t, a.by[ref])}, nil
}

// TestOneFactWhicheverChannel: for each asked provider and both event
// stores, random orders of query answers, webhooks (some dropped, some
// duplicated), settlement lines and registrations: the books
// (revenue:sales) and the outbound feed (payment.captured,
// expected_payment.paid) equal a model that counts each payment's capture
// once, and an expectation ends paid exactly when its payment was told by
// some channel. Small by default; ONCELEDGER_TEST_PROPERTY_RUNS sets the runs.
func TestOneFactWhicheverChannel(t *testing.T) {
	runs := 3
	if s := os.Getenv("ONCELEDGER_TEST_PROPERTY_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		runs = n
	}
	for _, store := range []string{"postgres", "esdb"} {
		for _, mk := range []func(t *testing.T) channels{
			func(*testing.T) channels { return alipayChannels() }, wechatChannels, func(*testing.T) channels { return stripeChannels() },
		} {
			ch := mk(t)
			t.Run(store+"/"+ch.provider, func(t *testing.T) {
				for run := range runs {
					oneRun(t, store, ch, uint64(run)+1)
				}
			})
		}
	}
}

func oneRun(t *testing.T, store string, ch channels, seed uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rng := mrand.New(mrand.NewPCG(seed, 36))
	cfg := app.Config{DatabaseURL: pgtest.NewDatabase(t), Logger: quietLogger(), QueryAfter: -1}
	if store == "esdb" {
		cfg.EventStore = esdbfake.Start(t).URL()
	}
	core, err := app.NewCore(ctx, cfg)
	require.NoError(t, err)
	defer core.Close()

	n := 3 + rng.IntN(4)
	by := map[string]int{}
	var actions []func()
	told := map[int]bool{}
	registered := map[int]bool{}
	var billed []int
	q := expectations.NewQuerier(map[string]expectations.Asker{ch.provider: answering{t: t, ch: ch, by: by}},
		core.Service(), nil, expectations.QueryConfig{Rate: 1e6})
	for i := range n {
		by[ch.ref(i)] = i
		if rng.IntN(4) > 0 {
			registered[i] = true
			actions = append(actions, func() {
				_, _, err := core.Expectations().Register(ctx, expectation.RegisterCommand{Provider: ch.provider, Reference: ch.ref(i),
					Amount: amountOf(i), Currency: map[bool]string{true: "USD", false: "CNY"}[ch.provider == "stripe"],
					ExpiresAt: time.Now().Add(time.Hour), Actor: "shop"})
				require.NoError(t, err)
			})
		}
		for range rng.IntN(3) { // 0, 1 or 2 answers
			told[i] = true
			actions = append(actions, func() {
				o, err := q.Ask(ctx, ch.provider, ch.ref(i))
				require.NoError(t, err)
				require.Equal(t, expectations.OutcomePaid, o)
			})
		}
		for range rng.IntN(3) { // dropped, delivered, duplicated
			told[i] = true
			actions = append(actions, func() {
				_, err := core.Service().Ingest(ctx, ch.webhook(t, i))
				require.NoError(t, err)
			})
		}
		if ch.bill != nil && rng.IntN(2) == 0 {
			told[i] = true
			billed = append(billed, i)
		}
	}
	if len(billed) > 0 {
		file := ch.bill(t, billed)
		for range 1 + rng.IntN(2) { // imported once or twice
			actions = append(actions, func() {
				_, err := core.Importer().Import(ctx, ch.provider, func() (io.ReadCloser, error) {
					return io.NopCloser(bytes.NewReader(file)), nil
				}, report.Options{})
				require.NoError(t, err)
			})
		}
	}
	m := core.ExpectationManager("prop")
	rng.Shuffle(len(actions), func(a, b int) { actions[a], actions[b] = actions[b], actions[a] })
	for k, act := range actions {
		act()
		if rng.IntN(3) == 0 || k == len(actions)-1 {
			drainManager(t, ctx, m)
		}
	}
	drainAll(t, ctx, m, core)

	wantRevenue, wantDiscounts, wantCaptured := model(ch.provider, n, told)
	recs, err := readAll(ctx, t, core.Events().Store)
	require.NoError(t, err)
	var revenue, discounts, balance int64
	types := map[string]int{}
	paid := map[string]int{}
	for _, r := range recs {
		e, err := outbound.FromRecorded(r)
		require.NoError(t, err)
		types[e.Type]++
		if e.Type == outbound.ExpectedPaymentPaid {
			paid[e.Data["reference"].(string)]++
		}
		if strings.HasPrefix(r.StreamID, delivery.PaymentStreamPrefix) {
			pe, err := payment.Decode(r.Type, r.Data)
			require.NoError(t, err)
			for _, p := range payment.Postings(pe) {
				switch p.Account {
				case ledger.RevenueSales:
					revenue += p.Amount
				case "expenses:discounts:" + ch.provider:
					discounts += p.Amount
				case "provider:" + ch.provider + ":balance":
					balance += p.Amount
				}
			}
		}
	}
	assert.Equal(t, wantRevenue, revenue, "seed %d: revenue:sales counts each capture once", seed)
	assert.Equal(t, wantDiscounts, discounts, "seed %d: each coupon once, whichever channel told it", seed)
	assert.Equal(t, -wantRevenue-wantDiscounts, balance, "seed %d: the provider holds the captures less their coupons (fees 0)", seed)
	assert.Equal(t, wantCaptured, types[outbound.PaymentCaptured], "seed %d: one payment.captured per told payment", seed)
	for i := range n {
		want := 0
		if registered[i] && told[i] {
			want = 1
		}
		assert.Equal(t, want, paid[ch.ref(i)], "seed %d: %s expected_payment.paid", seed, ch.ref(i))
		if registered[i] {
			x, err := core.Expectations().Get(ctx, expectation.IDOf(ch.provider, ch.ref(i)))
			require.NoError(t, err)
			assert.Equal(t, told[i], x.Status == expectation.StatusPaid, "seed %d: %s is %s", seed, ch.ref(i), x.Status)
		}
	}
}

// model: each told payment captured once, with its coupon (Stripe's
// carry none).
func model(provider string, n int, told map[int]bool) (revenue, discounts int64, captured int) {
	for i := range n {
		if told[i] {
			revenue -= amountOf(i)
			captured++
			if provider != "stripe" {
				discounts += couponOf(i)
			}
		}
	}
	return revenue, discounts, captured
}

func drainManager(t *testing.T, ctx context.Context, m *expectations.Manager) {
	t.Helper()
	for range 1000 {
		n, err := m.Step(ctx)
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
	t.Fatal("the expectation manager never caught up")
}

// readAll reads the whole feed up to the head as it is now: the Postgres
// feed shows a commit once every earlier transaction has ended (its
// horizon), so an empty page before the head means "not yet".
func readAll(ctx context.Context, t *testing.T, s eventstore.Store) ([]eventstore.RecordedEvent, error) {
	head, err := s.Head(ctx)
	if err != nil {
		return nil, err
	}
	var out []eventstore.RecordedEvent
	at := eventstore.Start
	for at.Less(head) {
		recs, err := s.ReadAll(ctx, at, 500)
		if err != nil {
			return out, err
		}
		if len(recs) == 0 {
			require.NoError(t, ctx.Err(), "the feed never reached its head")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		out = append(out, recs...)
		at = recs[len(recs)-1].Position
	}
	return out, nil
}

// drainAll steps the manager until it has seen the feed up to the head
// (its own appends included, until it appends nothing more).
func drainAll(t *testing.T, ctx context.Context, m *expectations.Manager, core *app.Core) {
	t.Helper()
	for {
		head, err := core.Events().Store.Head(ctx)
		require.NoError(t, err)
		var c, p int64
		drainManager(t, ctx, m)
		require.NoError(t, core.Pool().QueryRow(ctx, `SELECT commit_pos, prepare_pos FROM expectation_checkpoint`).Scan(&c, &p))
		at := eventstore.Position{Commit: uint64(c), Prepare: uint64(p)}
		if !at.Less(head) {
			if again, err := core.Events().Store.Head(ctx); err == nil && again == head {
				return
			}
			continue
		}
		require.NoError(t, ctx.Err(), "the manager never reached the head")
		time.Sleep(10 * time.Millisecond)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
