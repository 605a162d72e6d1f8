package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/alipay"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/domain/delivery"
)

const (
	testAppID  = "2021000000000001"
	testMchID  = "1900000109"
	testSerial = "PUB_KEY_ID_0114232134912410000000000000"
	testAPIv3  = "0123456789abcdefghijklmnopqrstuv"
)

// cnTestKeys: Alipay's and WeChat Pay's signing keys, made once (RSA key
// generation is slow under -race).
var cnTestKeys = sync.OnceValues(func() ([2]*rsa.PrivateKey, error) {
	var out [2]*rsa.PrivateKey
	for i := range out {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return out, err
		}
		out[i] = k
	}
	return out, nil
})

// cnFake stands in for the server's Alipay and WeChat Pay endpoints: it
// verifies (and decrypts) each notification with the server's own
// provider adapters, dedups by the delivery key (first payload wins),
// applies the facts per docs/reference.md (a capture once per trade,
// Alipay's cumulative refunds by their increase over the highest total,
// WeChat refunds once per refund id, ABNORMAL and unpaid closes posting
// nothing), and answers as the providers expect: 200 "success", 204.
type cnFake struct {
	*fakeLedger // balances, projections and GET /v1/balances
	ali         *alipay.Adapter
	wx          *wechatpay.Adapter

	cnMu    sync.Mutex
	keys    map[string]bool                              // provider/dedup key
	ids     map[string]bool                              // provider/business id posted
	highest map[string]int64                             // alipay trade → highest refunded total
	answer  func(provider string, w http.ResponseWriter) // nil: the providers' acknowledgements
}

func publicKeyPEM(t *testing.T, k *rsa.PrivateKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func newCNFake(t *testing.T) *cnFake {
	keys, err := cnTestKeys()
	require.NoError(t, err)
	ali, err := alipay.New([][]byte{publicKeyPEM(t, keys[0])}, []string{testAppID})
	require.NoError(t, err)
	wx, err := wechatpay.New(map[string][]byte{testSerial: publicKeyPEM(t, keys[1])}, [][]byte{[]byte(testAPIv3)}, []string{testMchID}, 5*time.Minute)
	require.NoError(t, err)
	return &cnFake{fakeLedger: newFake(t), ali: ali, wx: wx, keys: map[string]bool{}, ids: map[string]bool{}, highest: map[string]int64{}}
}

func (f *cnFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	provider, ok := strings.CutPrefix(r.URL.Path, "/webhooks/")
	if !ok || (provider != alipay.Name && provider != wechatpay.Name) {
		f.fakeLedger.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var evs []delivery.Event
	var err error
	if provider == alipay.Name {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			err = fmt.Errorf("content type %q", ct)
		} else {
			evs, err = f.ali.Parse(providers.Request{Header: r.Header, Body: body})
		}
	} else {
		evs, err = f.wx.Parse(providers.Request{Header: r.Header, Body: body, Now: time.Now()})
	}
	if err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"code":"FAIL","message":%q}`, err.Error())
		return
	}
	f.cnMu.Lock()
	f.mu.Lock()
	for _, ev := range evs {
		if !f.keys[provider+"/"+ev.DedupKey] {
			f.keys[provider+"/"+ev.DedupKey] = true
			f.applyCN(provider, ev)
		}
	}
	f.mu.Unlock()
	f.cnMu.Unlock()
	if f.answer != nil {
		f.answer(provider, w)
		return
	}
	if provider == alipay.Name {
		_, _ = io.WriteString(w, "success")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// applyCN posts ev's facts; f.mu and f.cnMu are held.
func (f *cnFake) applyCN(p string, ev delivery.Event) {
	for _, fact := range ev.Facts {
		c := string(fact.Currency)
		switch fact.Kind {
		case delivery.KindCaptured:
			if !f.ids[p+"/"+fact.BusinessID] {
				f.ids[p+"/"+fact.BusinessID] = true
				f.post("provider:"+p+":balance", c, fact.Amount)
				f.post("revenue:sales", c, -fact.Amount)
			}
		case delivery.KindRefundCumulative:
			if inc := fact.Amount - f.highest[ev.PaymentKey]; inc > 0 {
				f.highest[ev.PaymentKey] = fact.Amount
				f.post("revenue:refunds", c, inc)
				f.post("provider:"+p+":balance", c, -inc)
			}
		case delivery.KindRefunded:
			if !f.ids[p+"/"+fact.BusinessID] {
				f.ids[p+"/"+fact.BusinessID] = true
				f.post("revenue:refunds", c, fact.Amount)
				f.post("provider:"+p+":balance", c, -fact.Amount)
			}
		}
	}
}

// cnOptions writes the private keys where the options name them: Alipay's
// as PKCS #8 (openssl genpkey), WeChat's as PKCS #1.
func cnOptions(t *testing.T, url string) options {
	keys, err := cnTestKeys()
	require.NoError(t, err)
	dir := t.TempDir()
	p8, err := x509.MarshalPKCS8PrivateKey(keys[0])
	require.NoError(t, err)
	aliPath, wxPath := filepath.Join(dir, "alipay.pem"), filepath.Join(dir, "wechatpay.pem")
	require.NoError(t, os.WriteFile(aliPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), 0o600))
	require.NoError(t, os.WriteFile(wxPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(keys[1])}), 0o600))
	o := testOptions(url)
	o.Providers, o.Payments = "alipay,wechatpay", 120
	o.AlipayKeyFile, o.AlipayAppID = aliPath, testAppID
	o.WechatpayKeyFile, o.WechatpaySerial, o.WechatpayAPIv3Key, o.WechatpayMchID = wxPath, testSerial, testAPIv3, testMchID
	return o
}

// A run of Alipay and WeChat Pay notifications, with redeliveries (some
// concurrent), refunds sent before their capture and conflicting
// redeliveries, against a server whose verifiers are the real adapters:
// every delivery verifies, every answer is the provider's acknowledgement,
// and the ledger matches the generator's model.
func TestRunAlipayAndWechatpay(t *testing.T) {
	fake := newCNFake(t)
	srv := httptest.NewServer(fake)
	defer srv.Close()

	s, code, stderr := runJSON(t, cnOptions(t, srv.URL))
	require.True(t, code == 0 && s.Verdict == "MATCH",
		"exit %d, verdict %s, differences %+v, violations %v\nstderr: %s", code, s.Verdict, s.Differences, s.AnswerViolations, stderr)
	require.True(t, s.Planned.Copies != 0 && s.Planned.Twins != 0 && s.Planned.Conflicts != 0 && s.Reordered != 0,
		"traffic not as configured: %+v", s)
	o := s.Outcomes
	assert.Equal(t, int64(s.Planned.total()), o.Acknowledged, "every delivery acknowledged once: %+v", o)
	assert.True(t, o.Accepted == 0 && o.Duplicate == 0 && o.Other2xx == 0 && o.Status4xx == 0, "outcomes %+v", o)
	assert.Equal(t, s.Planned.Conflicts, s.ConflictsDuplicate, "conflicting redeliveries acknowledged")
	assert.Zero(t, s.AnswersChecked, "acknowledgements tell no first arrival: no key is counted")
	assert.Empty(t, s.AnswerViolations)
	assert.Zero(t, s.Payouts, "Alipay and WeChat Pay notify no payouts")
	f := fake.fakeLedger
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range []string{"alipay", "wechatpay"} {
		assert.Positive(t, f.balances[[2]string{"provider:" + p + ":balance", "CNY"}], "%s: nothing posted", p)
	}
	assert.NotZero(t, f.balances[[2]string{"revenue:refunds", "CNY"}], "no refund posted")
}

// A 2xx that is not the provider's exact acknowledgement is a violation:
// Alipay retries anything but "success", and WeChat never retries a 200,
// so a 200 carrying FAIL loses the fact.
func TestRunFlagsAnswersOtherThanTheAcknowledgement(t *testing.T) {
	fake := newCNFake(t)
	fake.answer = func(provider string, w http.ResponseWriter) {
		if provider == alipay.Name {
			_, _ = io.WriteString(w, "success\n")
			return
		}
		_, _ = io.WriteString(w, `{"code":"FAIL","message":"x"}`)
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	o := cnOptions(t, srv.URL)
	o.Payments, o.Duplicates, o.Conflicts = 10, 0, 0
	s, code, _ := runJSON(t, o)
	assert.Equal(t, 1, code, "verdict %s", s.Verdict)
	var ali, wx int
	for _, v := range s.AnswerViolations {
		switch {
		case strings.HasPrefix(v, "alipay/") && strings.Contains(v, `not acknowledged: 200 "success\n"`):
			ali++
		case strings.HasPrefix(v, "wechatpay/") && strings.Contains(v, `not acknowledged: 200`):
			wx++
		}
	}
	assert.True(t, ali > 0 && wx > 0 && ali+wx == len(s.AnswerViolations), "violations %v", s.AnswerViolations)
	assert.Equal(t, int64(0), s.Outcomes.Acknowledged)
}

func TestCNOutcome(t *testing.T) {
	assert.Equal(t, outcomeAcknowledged, cnOutcome("alipay", http.StatusOK, []byte("success")))
	assert.Equal(t, outcomeAcknowledged, cnOutcome("wechatpay", http.StatusNoContent, nil))
	for _, c := range []struct {
		p    string
		code int
		body string
	}{{"alipay", 200, "success\n"}, {"alipay", 200, `{"status":"accepted"}`}, {"alipay", 204, ""},
		{"wechatpay", 200, ""}, {"wechatpay", 204, "x"}, {"wechatpay", 200, `{"code":"SUCCESS"}`}} {
		assert.NotEqual(t, outcomeAcknowledged, cnOutcome(c.p, c.code, []byte(c.body)), "%s %d %q", c.p, c.code, c.body)
	}
}

func TestCNFlags(t *testing.T) {
	t.Setenv("ONCELEDGER_API_TOKENS", "tok")
	t.Setenv("ONCELEDGER_ALIPAY_APP_IDS", " 2021001, 2021002")
	t.Setenv("ONCELEDGER_WECHATPAY_KEYS", "PUB_KEY_ID_1=/k/a.pem,5157F09EFDC096DE15EBE81A47057A7232F1B8E1=/k/b.pem")
	t.Setenv("ONCELEDGER_WECHATPAY_APIV3_KEYS", testAPIv3)
	t.Setenv("ONCELEDGER_WECHATPAY_MCHIDS", testMchID)
	o, err := parseFlags([]string{"--providers", "alipay,wechatpay", "--alipay-private-key", "a.pem", "--wechatpay-private-key", "w.pem"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.AlipayAppID == "2021001" && o.WechatpaySerial == "PUB_KEY_ID_1" && o.WechatpayAPIv3Key == testAPIv3 && o.WechatpayMchID == testMchID,
		"options %+v", o)
	_, err = parseFlags([]string{"--providers", "alipay"}, io.Discard)
	assert.ErrorIs(t, err, errNoSecret, "alipay without a private key")
	_, err = parseFlags([]string{"--providers", "wechatpay"}, io.Discard)
	assert.ErrorIs(t, err, errNoSecret, "wechatpay without a private key")
}
