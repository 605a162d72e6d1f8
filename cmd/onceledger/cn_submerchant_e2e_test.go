package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A WeChat Pay service provider's payment carries its sub-merchant
// (sub_mchid) through to the payments read model (sub_merchant, NULL for a
// direct merchant), GET /v1/payments/{provider}/{id} (sub_merchant, absent
// for a direct merchant: docs/reference.md) and the console's payment page.
func TestWechatpaySubMerchantOnThePayment(t *testing.T) {
	eachCNStore(t, func(t *testing.T, s *cnStack) {
		sp, direct := uniqCN("4200SM"), uniqCN("4200DM")
		content := wxTransaction(sp, 5000)
		delete(content, "mchid")
		content["sp_mchid"], content["sub_mchid"] = cnSpMchID, cnSubMchID
		wantNoContent(t, s.wechat(wechatBody(t, "EV-sm-"+sp, "TRANSACTION.SUCCESS", content)), "service provider")
		wantNoContent(t, s.wechat(wechatBody(t, "EV-dm-"+direct, "TRANSACTION.SUCCESS", wxTransaction(direct, 3000))), "direct merchant")

		column := func(id string) *string {
			var v *string
			err := s.app.Pool().QueryRow(context.Background(),
				`SELECT sub_merchant FROM payments WHERE provider = 'wechatpay' AND payment_id = $1`, id).Scan(&v)
			if err != nil {
				return nil
			}
			return v
		}
		require.Eventually(t, func() bool { v := column(sp); return v != nil && *v == cnSubMchID },
			30*time.Second, 20*time.Millisecond, "payments.sub_merchant of the service provider's payment")
		require.Eventually(t, func() bool {
			var n int
			_ = s.app.Pool().QueryRow(context.Background(),
				`SELECT count(*) FROM payments WHERE provider = 'wechatpay' AND payment_id = $1 AND sub_merchant IS NULL`, direct).Scan(&n)
			return n == 1
		}, 30*time.Second, 20*time.Millisecond, "a direct merchant's payment has no sub_merchant")

		auth := http.Header{"Authorization": {"Bearer " + cnReadToken}}
		var got map[string]any
		a := s.do(http.MethodGet, "/v1/payments/wechatpay/"+sp, auth, nil)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.NoError(t, json.Unmarshal([]byte(a.Body), &got))
		assert.Equal(t, cnSubMchID, got["sub_merchant"], a.Body)
		got = nil
		a = s.do(http.MethodGet, "/v1/payments/wechatpay/"+direct, auth, nil)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.NoError(t, json.Unmarshal([]byte(a.Body), &got))
		assert.NotContains(t, got, "sub_merchant", "a direct merchant's payment names no sub-merchant")

		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		client := &http.Client{Jar: jar}
		resp, err := client.PostForm(s.base+"/console/signin", url.Values{"token": {cnReadToken}})
		require.NoError(t, err)
		_ = resp.Body.Close()
		page := func(id string) string {
			resp, err := client.Get(s.base + "/console/payments/wechatpay/" + id)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
			return string(b)
		}
		assert.Contains(t, page(sp), `<dd id="payment-sub-merchant"><code>`+cnSubMchID+`</code></dd>`)
		assert.False(t, strings.Contains(page(direct), "payment-sub-merchant"), "no sub-merchant row for a direct merchant")
	})
}
