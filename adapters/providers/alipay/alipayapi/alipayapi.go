// Package alipayapi is the Alipay OpenAPI client of settle sync alipay: it
// asks alipay.data.dataservice.bill.downloadurl.query for a day's bill
// download URL and downloads the bill (a .csv.zip), for the settlement
// import (alipay.ParseSettlement) to read like a file an operator
// downloaded.
//
// The protocol, as Alipay's OpenAPI documents it (自行实现签名: sign a
// request, verify an answer) and smartwalle/alipay implements it (alipay.go:
// signWithPKCS1v15 signs a request, decode and split verify an answer):
//   - a POST to the gateway (https://openapi.alipay.com/gateway.do), form
//     encoded: app_id, method, format=JSON, charset=utf-8, sign_type=RSA2,
//     timestamp (yyyy-MM-dd HH:mm:ss, Beijing time), version=1.0,
//     biz_content (JSON: bill_type, bill_date) and sign;
//   - sign is RSA PKCS #1 v1.5 SHA-256 (RSA2) with the app's private key
//     over every other non-empty parameter, sorted by key, k=v joined by
//     '&', values not URL-encoded; unlike a notification's check, sign_type
//     is signed;
//   - the answer is {"alipay_data_dataservice_bill_downloadurl_query_response":
//     {…}, "sign": "…"} (or "error_response" for a request the gateway could
//     not route), and sign is Alipay's RSA2 signature of the response
//     object's text exactly as received, checked with Alipay's public key
//     (the one of the notifications) before anything in it is believed; an
//     answer without sign is an error report (smartwalle: "没有签名数据，
//     返回的内容一般为错误信息"), of which nothing but the error is taken;
//   - code "10000" is success; other codes carry sub_code/sub_msg
//     (isp.bill_not_exist: no bill for that day, or not yet generated);
//   - bill_download_url is valid for 30 seconds and serves the zip without
//     a signature of its own: its authenticity is the signed answer's.
//
// Public-key certificate mode (app_cert_sn, alipay_root_cert_sn) is not
// spoken: the requests are signed in public-key mode.
package alipayapi

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/alipay"
)

// DefaultGateway is the OpenAPI gateway (ONCELEDGER_ALIPAY_GATEWAY's
// default).
const DefaultGateway = "https://openapi.alipay.com/gateway.do"

// Method is the API asked for a bill's download URL; ResponseKey names its
// answer's object.
const (
	Method      = "alipay.data.dataservice.bill.downloadurl.query"
	ResponseKey = "alipay_data_dataservice_bill_downloadurl_query_response"
)

// The bill types downloaded: the trade bill (业务明细) and the account bill
// (账务明细).
const (
	BillTrade        = "trade"
	BillSignCustomer = "signcustomer"
)

// maxBillBytes bounds a download.
const maxBillBytes = 1 << 30

// beijing is the zone of the request timestamp and of bill dates.
var beijing = time.FixedZone("CST", 8*3600)

var (
	// ErrSignature is wrapped when an answer is unsigned or its signature
	// does not verify with Alipay's public keys.
	ErrSignature = errors.New("alipay api: the answer's signature does not verify")
	// ErrNoBill is wrapped when Alipay has no bill for the day
	// (isp.bill_not_exist).
	ErrNoBill = errors.New("alipay api: no bill")
)

// APIError is an answer whose code is not 10000.
type APIError struct {
	Code, Msg, SubCode, SubMsg string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("alipay api: %s %s: %s %s", e.Code, e.Msg, e.SubCode, e.SubMsg)
}

// Unwrap is ErrNoBill for isp.bill_not_exist.
func (e *APIError) Unwrap() error {
	if e.SubCode == "isp.bill_not_exist" {
		return ErrNoBill
	}
	return nil
}

// Client calls the OpenAPI as one app. Safe for concurrent use.
type Client struct {
	gateway string
	appID   string
	key     *rsa.PrivateKey
	alipay  *alipay.ResponseVerifier
	http    *http.Client
	// Now is the request timestamp's clock; tests replace it.
	Now func() time.Time
}

// New returns a client of the gateway (DefaultGateway when "") for appID,
// signing with the app's private key (PEM: PKCS #1 or PKCS #8, or the bare
// base64 Alipay's key tool prints) and verifying answers with Alipay's
// public keys (PEM, as ONCELEDGER_ALIPAY_PUBLIC_KEYS). hc may be nil.
func New(gateway, appID string, privateKey []byte, alipayKeys [][]byte, hc *http.Client) (*Client, error) {
	if gateway == "" {
		gateway = DefaultGateway
	}
	if u, err := url.Parse(gateway); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("alipay api: gateway %q is not an http(s) URL", gateway)
	}
	if strings.TrimSpace(appID) == "" {
		return nil, errors.New("alipay api: no app_id")
	}
	key, err := ParsePrivateKey(privateKey)
	if err != nil {
		return nil, fmt.Errorf("alipay api: %s: %w", EnvAppPrivateKey, err)
	}
	v, err := alipay.NewResponseVerifier(alipayKeys)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{gateway: gateway, appID: strings.TrimSpace(appID), key: key, alipay: v, http: hc, Now: time.Now}, nil
}

// ParsePrivateKey reads an RSA private key of at least 2048 bits: PEM
// "RSA PRIVATE KEY" (PKCS #1) or "PRIVATE KEY" (PKCS #8), or their DER in
// bare base64, as Alipay's key tool (支付宝开放平台密钥工具) prints it.
func ParsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	der := []byte(nil)
	if block, _ := pem.Decode(data); block != nil {
		der = block.Bytes
	} else if b, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(data), nil))); err == nil && len(b) > 0 {
		der = b
	} else {
		return nil, errors.New("not a PEM private key nor its base64")
	}
	var key any
	key, err := x509.ParsePKCS1PrivateKey(der)
	if err != nil {
		if key, err = x509.ParsePKCS8PrivateKey(der); err != nil {
			return nil, errors.New("not an RSA private key (PKCS #1 or PKCS #8)")
		}
	}
	k, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an RSA key (RSA2 is RSA)", key)
	}
	if k.N.BitLen() < 2048 {
		return nil, fmt.Errorf("a %d-bit RSA key; RSA2 keys are 2048 bits", k.N.BitLen())
	}
	return k, nil
}

// signContent is what a request signs: every parameter but sign, empty
// values dropped, sorted by key, k=v joined by '&', values as they are.
func signContent(params url.Values) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		if k != "sign" && params.Get(k) != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + params.Get(k)
	}
	return strings.Join(parts, "&")
}

// DownloadURL asks for the download URL of the day's bill of billType
// (BillTrade, BillSignCustomer); date is YYYY-MM-DD.
func (c *Client) DownloadURL(ctx context.Context, billType, date string) (string, error) {
	biz, err := json.Marshal(map[string]string{"bill_type": billType, "bill_date": date})
	if err != nil {
		return "", err
	}
	params := url.Values{
		"app_id": {c.appID}, "method": {Method}, "format": {"JSON"}, "charset": {"utf-8"},
		"sign_type": {"RSA2"}, "timestamp": {c.Now().In(beijing).Format(time.DateTime)}, "version": {"1.0"},
		"biz_content": {string(biz)},
	}
	digest := sha256.Sum256([]byte(signContent(params)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, c.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("alipay api: signing: %w", err)
	}
	params.Set("sign", base64.StdEncoding.EncodeToString(sig))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.gateway, strings.NewReader(params.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded;charset=utf-8")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("alipay api: %s: %w", Method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("alipay api: %s: %w", Method, err)
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("alipay api: %s: HTTP %d", Method, resp.StatusCode)
	}
	return c.answer(body)
}

// answer verifies a gateway answer and reads its bill_download_url.
func (c *Client) answer(body []byte) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "", fmt.Errorf("alipay api: %s: the answer is not JSON: %w", Method, err)
	}
	raw, ok := top[ResponseKey]
	if !ok {
		if raw, ok = top["error_response"]; !ok {
			return "", fmt.Errorf("alipay api: %s: the answer has no %s", Method, ResponseKey)
		}
	}
	var r struct {
		Code    string `json:"code"`
		Msg     string `json:"msg"`
		SubCode string `json:"sub_code"`
		SubMsg  string `json:"sub_msg"`
		URL     string `json:"bill_download_url"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("alipay api: %s: %w", Method, err)
	}
	var sign string
	_ = json.Unmarshal(top["sign"], &sign)
	if sign == "" {
		if r.Code != "10000" {
			// The gateway leaves some refusals unsigned (a request it could
			// not authenticate); nothing is taken from them but the error.
			return "", &APIError{Code: r.Code, Msg: r.Msg, SubCode: r.SubCode, SubMsg: r.SubMsg}
		}
		return "", fmt.Errorf("%w: the answer is not signed", ErrSignature)
	}
	sig, err := base64.StdEncoding.DecodeString(sign)
	if err != nil || !c.alipay.Verify(raw, sig) {
		return "", fmt.Errorf("%w (%s, %s)", ErrSignature, ResponseKey, alipay.EnvPublicKeys)
	}
	if r.Code != "10000" {
		return "", &APIError{Code: r.Code, Msg: r.Msg, SubCode: r.SubCode, SubMsg: r.SubMsg}
	}
	if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("alipay api: %s: bill_download_url %q is not an http(s) URL", Method, r.URL)
	}
	return r.URL, nil
}

// Download writes the day's bill of billType (the .csv.zip) to w.
func (c *Client) Download(ctx context.Context, billType, date string, w io.Writer) error {
	u, err := c.DownloadURL(ctx, billType, date)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("alipay api: downloading the %s bill: %w", billType, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("alipay api: downloading the %s bill: HTTP %d", billType, resp.StatusCode)
	}
	br := io.LimitReader(resp.Body, maxBillBytes)
	head := make([]byte, 4)
	n, _ := io.ReadFull(br, head)
	if !bytes.Equal(head[:n], []byte("PK\x03\x04")) {
		// An expired URL (valid 30 seconds) answers a page, not the zip.
		return fmt.Errorf("alipay api: the %s bill download is not a zip", billType)
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := io.Copy(w, br); err != nil {
		return fmt.Errorf("alipay api: downloading the %s bill: %w", billType, err)
	}
	return nil
}

// Bill is one downloaded bill.
type Bill struct {
	Type string // BillTrade or BillSignCustomer
	Path string // the .csv.zip
}

// Bills downloads the day's trade bill and account bill into dir, both
// before either is imported: a refused answer leaves nothing to import.
func (c *Client) Bills(ctx context.Context, date string, dir string) ([]Bill, error) {
	if _, err := time.ParseInLocation(time.DateOnly, date, beijing); err != nil {
		return nil, fmt.Errorf("alipay api: bill date %q is not YYYY-MM-DD", date)
	}
	var out []Bill
	for _, typ := range []string{BillTrade, BillSignCustomer} {
		path := filepath.Join(dir, fmt.Sprintf("alipay-%s-%s.csv.zip", typ, date))
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		err = c.Download(ctx, typ, date, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Bill{Type: typ, Path: path})
	}
	return out, nil
}
