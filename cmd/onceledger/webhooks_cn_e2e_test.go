package main_test

// Alipay and WeChat Pay end to end: notifications signed (and, for WeChat,
// encrypted) as each provider does it, through serve's whole app (the
// projectors included) on a real socket, on both event stores: every fact
// and every refusal with the exact answers the providers expect, 50
// identical concurrent deliveries, and the accounts through GET
// /v1/balances.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/registry"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/payment"
)

const (
	cnAppID     = "2021000000000001"
	cnMchID     = "1900000109"
	cnSpMchID   = "1900000100"
	cnSubMchID  = "1900000201"
	cnPubKeyID  = "PUB_KEY_ID_0114232134912410000000000000"
	cnAPIv3Key  = "0123456789abcdefghijklmnopqrstuv" // 32 bytes
	cnReadToken = "cn-read-token"
)

// cnKeys are generated once per test binary (RSA is slow under -race).
var cnKeys = sync.OnceValues(func() ([3]*rsa.PrivateKey, error) {
	var out [3]*rsa.PrivateKey // alipay, wechatpay, rogue
	for i := range out {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return out, err
		}
		out[i] = k
	}
	return out, nil
})

// cnStack is serve's app with Alipay and WeChat Pay configured through the
// registry, as serve configures them.
type cnStack struct {
	t                       *testing.T
	base                    string
	app                     *app.App
	alipayKey, wxKey, rogue *rsa.PrivateKey
}

func pemFile(t *testing.T, dir, name string, k *rsa.PrivateKey) string {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
	return path
}

func startCNStack(t *testing.T, kind eventStoreKind) *cnStack {
	t.Helper()
	keys, err := cnKeys()
	require.NoError(t, err)
	dir := t.TempDir()
	set := registry.NewSet()
	ali := set.Config(alipay.Name).(*alipay.Config)
	ali.PublicKeys, ali.AppIDs = []string{pemFile(t, dir, "alipay.pem", keys[0])}, []string{cnAppID}
	wx := set.Config(wechatpay.Name).(*wechatpay.Config)
	wx.Keys = []string{cnPubKeyID + "=" + pemFile(t, dir, "wechatpay.pem", keys[1])}
	wx.APIv3Keys, wx.MchIDs = []string{cnAPIv3Key}, []string{cnMchID, cnSpMchID}
	require.NoError(t, set.Check())
	unknown := app.NewUnknownKeys(testLogger())
	provs, err := set.Adapters(providers.Settings{Tolerance: 5 * time.Minute, UnknownKey: unknown.Report})
	require.NoError(t, err)
	cfg := app.Config{
		DatabaseURL: pgtest.NewDatabase(t), Projections: true, Providers: provs,
		APITokens: []string{cnReadToken}, Logger: testLogger(), UnknownKeys: unknown,
		MaxBodyBytes: maxBody, IngestTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		ShutdownTimeout: 5 * time.Second, ProviderConcurrency: -1,
	}
	if kind == onESDB {
		cfg.EventStore = esdbfake.Start(t).URL()
	}
	a, base := serveOnLoopback(t, cfg)
	return &cnStack{t: t, base: base, app: a, alipayKey: keys[0], wxKey: keys[1], rogue: keys[2]}
}

// cnAnswer is an answer with its content type.
type cnAnswer struct {
	Status      int
	Body        string
	ContentType string
}

func (s *cnStack) do(method, path string, h http.Header, body []byte) cnAnswer {
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return cnAnswer{Status: -1, Body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return cnAnswer{Status: resp.StatusCode, Body: string(b), ContentType: resp.Header.Get("Content-Type")}
}

// balances are GET /v1/balances (CNY, non-zero accounts), once the
// projectors have caught up with want (or the last seen after 10 s).
func (s *cnStack) balances(want map[string]int64) map[string]int64 {
	s.t.Helper()
	var got map[string]int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := s.do(http.MethodGet, "/v1/balances?currency=CNY", http.Header{"Authorization": {"Bearer " + cnReadToken}}, nil)
		require.Equal(s.t, http.StatusOK, a.Status, a.Body)
		var v struct {
			Balances []struct {
				Account string `json:"account"`
				Balance int64  `json:"balance"`
			} `json:"balances"`
		}
		require.NoError(s.t, json.Unmarshal([]byte(a.Body), &v))
		got = map[string]int64{}
		for _, b := range v.Balances {
			if b.Balance != 0 {
				got[b.Account] = b.Balance
			}
		}
		if assert.ObjectsAreEqual(want, got) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *cnStack) streamTypes(stream string) []string {
	return streamTypes(s.t, s.app.Events().Store, stream)
}

// Alipay's side: a notification's parameters, signed as Alipay signs them
// (every parameter but sign and sign_type, empty ones left out, sorted,
// k=v joined by '&', RSA PKCS #1 v1.5 over SHA-256) and form-encoded.
func alipayBody(t testing.TB, k *rsa.PrivateKey, params map[string]string) []byte {
	t.Helper()
	keys := make([]string, 0, len(params))
	for key, v := range params {
		if key != "sign" && key != "sign_type" && v != "" {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	var content strings.Builder
	form := url.Values{}
	for i, key := range keys {
		if i > 0 {
			content.WriteByte('&')
		}
		content.WriteString(key + "=" + params[key])
		form.Set(key, params[key])
	}
	sum := sha256.Sum256([]byte(content.String()))
	sig, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, sum[:])
	require.NoError(t, err)
	form.Set("sign", base64.StdEncoding.EncodeToString(sig))
	form.Set("sign_type", "RSA2")
	return []byte(form.Encode())
}

// alipayNotification is a trade_status_sync notification of trade with
// the given parameters over the defaults.
func alipayNotification(notifyID, trade, status string, with map[string]string) map[string]string {
	p := map[string]string{
		"notify_time": "2026-11-29 10:00:06", "notify_type": "trade_status_sync", "notify_id": notifyID,
		"app_id": cnAppID, "charset": "utf-8", "version": "1.0", "trade_no": trade, "out_trade_no": "order-" + trade,
		"trade_status": status, "total_amount": "88.00", "receipt_amount": "88.00", "gmt_payment": "2026-11-29 10:00:05",
		"subject": "会员 12 个月",
	}
	for k, v := range with {
		p[k] = v
	}
	return p
}

func (s *cnStack) alipay(body []byte) cnAnswer {
	return s.do(http.MethodPost, "/webhooks/alipay", http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}, body)
}

// WeChat's side: content encrypted with AEAD_AES_256_GCM under the APIv3
// key, the body signed over "timestamp\nnonce\nbody\n".
func wechatBody(t testing.TB, id, eventType string, content map[string]any) []byte {
	t.Helper()
	pt, err := json.Marshal(content)
	require.NoError(t, err)
	block, err := aes.NewCipher([]byte(cnAPIv3Key))
	require.NoError(t, err)
	gcm, err := cipher.NewGCM(block)
	require.NoError(t, err)
	nonce := "Kj7QIyUiYx1q"
	ct := gcm.Seal(nil, []byte(nonce), pt, []byte("transaction"))
	return mustJSON(map[string]any{
		"id": id, "create_time": "2026-11-29T18:00:00+08:00", "resource_type": "encrypt-resource",
		"event_type": eventType, "summary": "通知",
		"resource": map[string]any{"original_type": "transaction", "algorithm": "AEAD_AES_256_GCM",
			"ciphertext": base64.StdEncoding.EncodeToString(ct), "associated_data": "transaction", "nonce": nonce},
	})
}

func wechatHeaders(t testing.TB, k *rsa.PrivateKey, serial string, at time.Time, body []byte) http.Header {
	t.Helper()
	ts, nonce := strconv.FormatInt(at.Unix(), 10), "593BEC0C930BF1AFEB40B4A08C8FB242"
	sum := sha256.Sum256([]byte(ts + "\n" + nonce + "\n" + string(body) + "\n"))
	sig, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, sum[:])
	require.NoError(t, err)
	return http.Header{"Content-Type": {"application/json"}, "Wechatpay-Timestamp": {ts}, "Wechatpay-Nonce": {nonce},
		"Wechatpay-Serial": {serial}, "Wechatpay-Signature": {base64.StdEncoding.EncodeToString(sig)}}
}

func (s *cnStack) wechat(body []byte) cnAnswer {
	return s.do(http.MethodPost, "/webhooks/wechatpay", wechatHeaders(s.t, s.wxKey, cnPubKeyID, time.Now(), body), body)
}

func wxTransaction(tx string, total int64) map[string]any {
	return map[string]any{"mchid": cnMchID, "appid": "wxd678efh567hg6787", "transaction_id": tx, "out_trade_no": "o-" + tx,
		"trade_type": "JSAPI", "trade_state": "SUCCESS", "success_time": "2026-11-29T18:00:01+08:00",
		"amount": map[string]any{"total": total, "payer_total": total, "currency": "CNY"}}
}

func wxRefund(tx, refundID, status string, refund int64) map[string]any {
	return map[string]any{"mchid": cnMchID, "transaction_id": tx, "out_trade_no": "o-" + tx, "refund_id": refundID,
		"out_refund_no": "or-" + refundID, "refund_status": status, "success_time": "2026-11-30T18:00:01+08:00",
		"amount": map[string]any{"total": 10000, "refund": refund, "payer_total": 10000, "payer_refund": refund}}
}

// wantSuccess: Alipay's one acknowledgement, exactly.
func wantSuccess(t *testing.T, a cnAnswer, what string) {
	t.Helper()
	require.Equal(t, http.StatusOK, a.Status, "%s: %s", what, a.Body)
	require.Equal(t, "success", a.Body, what)
}

// wantNoContent: WeChat's acknowledgement, 204 with no body.
func wantNoContent(t *testing.T, a cnAnswer, what string) {
	t.Helper()
	require.Equal(t, http.StatusNoContent, a.Status, "%s: %s", what, a.Body)
	require.Empty(t, a.Body, what)
}

// wantFail: a WeChat refusal, status and {"code":"FAIL",…}, never a 200.
func wantFail(t *testing.T, a cnAnswer, status int, what string) {
	t.Helper()
	require.Equal(t, status, a.Status, "%s: %s", what, a.Body)
	var v struct{ Code, Message string }
	require.NoError(t, json.Unmarshal([]byte(a.Body), &v), "%s: %q", what, a.Body)
	assert.Equal(t, "FAIL", v.Code, what)
	assert.NotEmpty(t, v.Message, what)
	assert.Equal(t, "application/json", a.ContentType, what)
}

// fifty sends one delivery 50 times at once and returns the answers.
func fifty(send func() cnAnswer) []cnAnswer {
	const n = 50
	out := make([]cnAnswer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			out[i] = send()
		})
	}
	close(start)
	wg.Wait()
	return out
}

func uniqCN(prefix string) string { return fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()) }

func eachCNStore(t *testing.T, row func(t *testing.T, s *cnStack)) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) { row(t, startCNStack(t, kind)) })
	}
}

// Every Alipay fact, each answered exactly "success", and the accounts.
func TestAlipayNotificationsEndToEnd(t *testing.T) {
	eachCNStore(t, func(t *testing.T, s *cnStack) {
		a, b, c := uniqCN("2026A"), uniqCN("2026B"), uniqCN("2026C")
		send := func(notifyID, trade, status string, with map[string]string) cnAnswer {
			return s.alipay(alipayBody(t, s.alipayKey, alipayNotification(notifyID, trade, status, with)))
		}
		// A capture of 88.00 of which the buyer paid 80.00: a discount of 8.00.
		paid := alipayBody(t, s.alipayKey, alipayNotification("n-a-pay", a, "TRADE_SUCCESS", map[string]string{"receipt_amount": "80.00"}))
		wantSuccess(t, s.alipay(paid), "TRADE_SUCCESS")
		wantSuccess(t, s.alipay(paid), "the same notification again")
		wantSuccess(t, send("n-a-finished", a, "TRADE_FINISHED", nil), "TRADE_FINISHED after TRADE_SUCCESS")
		stream := "payment-alipay-" + a
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(stream), "TRADE_FINISHED after a capture moves nothing")

		// Refunds by cumulative total, out of order: 30.00 (second refund)
		// first, then 10.00 (the first one's total), then 50.00.
		refund := func(id, biz, total string) cnAnswer {
			return send(id, a, "TRADE_SUCCESS", map[string]string{"refund_fee": total, "out_biz_no": biz, "gmt_refund": "2026-11-30 09:00:00"})
		}
		wantSuccess(t, refund("n-a-r2", "biz-2", "30.00"), "second refund first")
		wantSuccess(t, refund("n-a-r1", "biz-1", "10.00"), "first refund late: nothing to post")
		wantSuccess(t, refund("n-a-r1-again", "biz-1", "10.00"), "first refund under another notify_id")
		wantSuccess(t, send("n-a-r3", a, "TRADE_CLOSED", map[string]string{"refund_fee": "50.00", "out_biz_no": "biz-3"}), "full refund closes")
		// The late first refund posts nothing; it is recorded, so that its
		// bill line opens no missing_webhook.
		assert.Equal(t, []string{payment.TypeCaptured, payment.TypeRefundPosted, payment.TypeRefundNoted, payment.TypeRefundPosted}, s.streamTypes(stream))

		// An unpaid close posts nothing and opens nothing; a trade notified
		// only TRADE_FINISHED is captured by it.
		wantSuccess(t, send("n-b-close", b, "TRADE_CLOSED", map[string]string{"gmt_payment": "", "receipt_amount": ""}), "unpaid TRADE_CLOSED")
		assert.Equal(t, []string{payment.TypeCanceled}, s.streamTypes("payment-alipay-"+b))
		wantSuccess(t, send("n-c-finished", c, "TRADE_FINISHED", nil), "TRADE_FINISHED alone")
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes("payment-alipay-"+c))
		wantSuccess(t, send("n-c-wait", c, "WAIT_BUYER_PAY", nil), "an ignored status is acknowledged too")

		want := map[string]int64{
			"provider:alipay:balance":   8000 - 5000 + 8800,
			"expenses:discounts:alipay": 800,
			"revenue:sales":             -8800 - 8800,
			"revenue:refunds":           5000,
		}
		assert.Equal(t, want, s.balances(want))
	})
}

// Alipay refusals: never 2xx, never "success", so Alipay retries.
func TestAlipayRefusalsEndToEnd(t *testing.T) {
	eachCNStore(t, func(t *testing.T, s *cnStack) {
		trade := uniqCN("2026R")
		p := alipayNotification("n-r-1", trade, "TRADE_SUCCESS", nil)
		refused := func(a cnAnswer, status int, what string) {
			t.Helper()
			assert.Equal(t, status, a.Status, "%s: %s", what, a.Body)
			assert.NotEqual(t, "success", a.Body, what)
		}
		refused(s.alipay(alipayBody(t, s.rogue, p)), http.StatusUnauthorized, "a key that is not Alipay's")
		body := alipayBody(t, s.alipayKey, p)
		refused(s.alipay(bytes.Replace(body, []byte("total_amount=88.00"), []byte("total_amount=98.00"), 1)), http.StatusUnauthorized, "tampered")
		other := alipayNotification("n-r-2", trade, "TRADE_SUCCESS", map[string]string{"app_id": "2021000000009999"})
		refused(s.alipay(alipayBody(t, s.alipayKey, other)), http.StatusUnauthorized, "an app_id not configured")
		refused(s.alipay(bytes.Replace(body, []byte("sign_type=RSA2"), []byte("sign_type=RSA"), 1)), http.StatusUnauthorized, "sign_type RSA")
		bad := alipayNotification("n-r-3", trade, "TRADE_SUCCESS", map[string]string{"total_amount": "88.001"})
		refused(s.alipay(alipayBody(t, s.alipayKey, bad)), http.StatusBadRequest, "an amount that is not fen")
		noID := alipayNotification("", trade, "TRADE_SUCCESS", nil)
		refused(s.alipay(alipayBody(t, s.alipayKey, noID)), http.StatusBadRequest, "no notify_id")
		assert.Empty(t, s.streamTypes("payment-alipay-"+trade), "nothing stored")
		wantSuccess(t, s.alipay(body), "the genuine one still records")
	})
}

// 50 identical notifications at once: one fact, all answered as the
// provider expects, no 5xx.
func TestCNFiftyIdenticalNotificationsAtOnce(t *testing.T) {
	eachCNStore(t, func(t *testing.T, s *cnStack) {
		trade := uniqCN("2026F")
		body := alipayBody(t, s.alipayKey, alipayNotification("n-f-1", trade, "TRADE_SUCCESS", nil))
		for i, a := range fifty(func() cnAnswer { return s.alipay(body) }) {
			wantSuccess(t, a, fmt.Sprintf("alipay delivery %d", i))
		}
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes("payment-alipay-"+trade))

		tx := uniqCN("4200F")
		wx := wechatBody(t, "EV-F-"+tx, "TRANSACTION.SUCCESS", wxTransaction(tx, 7000))
		h := wechatHeaders(t, s.wxKey, cnPubKeyID, time.Now(), wx) // several servers send the same signed bytes
		for i, a := range fifty(func() cnAnswer { return s.do(http.MethodPost, "/webhooks/wechatpay", h, wx) }) {
			wantNoContent(t, a, fmt.Sprintf("wechatpay delivery %d", i))
		}
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes("payment-wechatpay-"+tx))
	})
}

// Every WeChat Pay fact, each answered 204 with no body, and the accounts.
func TestWechatpayNotificationsEndToEnd(t *testing.T) {
	eachCNStore(t, func(t *testing.T, s *cnStack) {
		tx, sp := uniqCN("4200A"), uniqCN("4200S")
		paid := wechatBody(t, "EV-pay-"+tx, "TRANSACTION.SUCCESS", wxTransaction(tx, 10000))
		wantNoContent(t, s.wechat(paid), "TRANSACTION.SUCCESS")
		wantNoContent(t, s.wechat(paid), "the same notification again")
		wantNoContent(t, s.wechat(wechatBody(t, "EV-r1-"+tx, "REFUND.SUCCESS", wxRefund(tx, "r1-"+tx, "SUCCESS", 3000))), "REFUND.SUCCESS")
		wantNoContent(t, s.wechat(wechatBody(t, "EV-r2a-"+tx, "REFUND.ABNORMAL", wxRefund(tx, "r2-"+tx, "ABNORMAL", 2000))), "REFUND.ABNORMAL")
		wantNoContent(t, s.wechat(wechatBody(t, "EV-r2-"+tx, "REFUND.SUCCESS", wxRefund(tx, "r2-"+tx, "SUCCESS", 2000))), "abnormal, then success")
		wantNoContent(t, s.wechat(wechatBody(t, "EV-r3-"+tx, "REFUND.CLOSED", wxRefund(tx, "r3-"+tx, "CLOSED", 1000))), "REFUND.CLOSED")
		wantNoContent(t, s.wechat(wechatBody(t, "EV-other-"+tx, "MCHTRANSFER.BILL.FINISHED", map[string]any{"mchid": cnMchID})), "an ignored type")
		assert.Equal(t, []string{payment.TypeCaptured, payment.TypeRefundPosted, payment.TypeRefundNoted, payment.TypeRefundPosted,
			payment.TypeRefundNoted}, s.streamTypes("payment-wechatpay-"+tx))

		// A service provider's notification: the sub-merchant is recorded.
		content := wxTransaction(sp, 5000)
		delete(content, "mchid")
		content["sp_mchid"], content["sub_mchid"] = cnSpMchID, cnSubMchID
		wantNoContent(t, s.wechat(wechatBody(t, "EV-sp-"+sp, "TRANSACTION.SUCCESS", content)), "service provider")
		evs, err := s.app.Events().Store.ReadStream(context.Background(), "payment-wechatpay-"+sp)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		e, err := payment.Decode(evs[0].Type, evs[0].Data)
		require.NoError(t, err)
		assert.Equal(t, cnSubMchID, e.(payment.Captured).SubMerchant)

		want := map[string]int64{
			"provider:wechatpay:balance": 10000 - 3000 - 2000 + 5000,
			"revenue:sales":              -15000,
			"revenue:refunds":            5000,
		}
		assert.Equal(t, want, s.balances(want))
	})
}

// WeChat Pay refusals: 401 (or 400) with {"code":"FAIL",…}, nothing
// stored, never a 200; an unknown serial also counts in the metric.
func TestWechatpayRefusalsEndToEnd(t *testing.T) {
	eachCNStore(t, func(t *testing.T, s *cnStack) {
		tx := uniqCN("4200R")
		body := wechatBody(t, "EV-"+tx, "TRANSACTION.SUCCESS", wxTransaction(tx, 100))
		post := func(h http.Header, b []byte) cnAnswer { return s.do(http.MethodPost, "/webhooks/wechatpay", h, b) }
		wantFail(t, post(wechatHeaders(t, s.rogue, cnPubKeyID, time.Now(), body), body), http.StatusUnauthorized, "a key that is not WeChat's")
		wantFail(t, post(wechatHeaders(t, s.wxKey, "PUB_KEY_ID_UNKNOWN", time.Now(), body), body), http.StatusUnauthorized, "an unknown serial")
		wantFail(t, post(wechatHeaders(t, s.wxKey, cnPubKeyID, time.Now().Add(-10*time.Minute), body), body), http.StatusUnauthorized, "a stale timestamp")
		probe := wechatHeaders(t, s.wxKey, cnPubKeyID, time.Now(), body)
		probe.Set("Wechatpay-Signature", "WECHATPAY/SIGNTEST/"+probe.Get("Wechatpay-Signature"))
		wantFail(t, post(probe, body), http.StatusUnauthorized, "a signature probe")
		other := wxTransaction(tx, 100)
		other["mchid"] = "1900009999"
		wantFail(t, s.wechat(wechatBody(t, "EV-m-"+tx, "TRANSACTION.SUCCESS", other)), http.StatusUnauthorized, "an mchid not configured")
		undecryptable := bytes.Replace(body, []byte(`"nonce":"Kj7QIyUiYx1q"`), []byte(`"nonce":"Kj7QIyUiYx1r"`), 1)
		wantFail(t, s.wechat(undecryptable), http.StatusUnauthorized, "a resource that does not decrypt")
		noAmount := wxTransaction(tx, 100)
		delete(noAmount, "amount")
		wantFail(t, s.wechat(wechatBody(t, "EV-a-"+tx, "TRANSACTION.SUCCESS", noAmount)), http.StatusBadRequest, "no amount")
		assert.Empty(t, s.streamTypes("payment-wechatpay-"+tx), "nothing stored")

		m := s.do(http.MethodGet, "/metrics", nil, nil)
		require.Equal(t, http.StatusOK, m.Status)
		assert.Contains(t, m.Body, `onceledger_webhook_unknown_key_total{provider="wechatpay"} 1`)
		wantNoContent(t, s.wechat(body), "the genuine one still records")
	})
}

// Unconfigured, both endpoints answer 404, as every provider's does, and
// the served answer names what would configure them.
func TestCNUnconfiguredAnswer404(t *testing.T) {
	s := newStack(t, onPostgres) // stripe and standard only
	for p, variable := range map[string]string{alipay.Name: "ONCELEDGER_ALIPAY_PUBLIC_KEYS", wechatpay.Name: "ONCELEDGER_WECHATPAY_KEYS"} {
		a := s.post("/webhooks/"+p, nil, []byte(`notify_id=1`))
		assert.Equal(t, http.StatusNotFound, a.Status, p)
		assert.Contains(t, a.Body, variable, p)
	}
}
