// Package wechatpayapi is the WeChat Pay API v3 client of settle sync
// wechatpay: it asks GET /v3/bill/tradebill (bill_type=ALL) and GET
// /v3/bill/fundflowbill (account_type=BASIC) for a day's bills and
// downloads them, for the settlement import (wechatpay.ParseSettlement) to
// read like files an operator downloaded.
//
// The protocol, as WeChat Pay's API v3 documents it (签名生成, 签名验证,
// 申请交易账单, 申请资金账单, 下载账单) and wechatpay-go implements it
// (core/auth/credentials, core/consts):
//   - every request carries Authorization: WECHATPAY2-SHA256-RSA2048
//     mchid="…",nonce_str="…",timestamp="…",serial_no="…",signature="…",
//     the signature SHA256withRSA with the merchant API private key over
//     "METHOD\nPATH?QUERY\ntimestamp\nnonce\nbody\n" (consts
//     SignatureMessageFormat);
//   - answers are signed like notifications (Wechatpay-Timestamp, -Nonce,
//     -Signature, -Serial over timestamp\nnonce\nbody\n) and checked with
//     the same keys (wechatpay.ResponseVerifier; 5 minutes of clock skew,
//     consts.FiveMinute); error answers (4xx/5xx, {"code","message"}) are
//     reported without being believed further;
//   - the bill answers are {hash_type: "SHA1", hash_value, download_url};
//     the download (GET download_url, signed like any request) is the file
//     itself without a Wechatpay-Signature: its integrity is that its SHA1
//     equals hash_value, which the signed answer carried. hash_value is the
//     digest of the bill as generated, before tar_type=GZIP compression
//     ("原始账单（gzip需要解压缩）的摘要值"), so a gzip download is
//     decompressed before it is hashed. A download whose digest differs is
//     refused, and nothing of it is imported.
package wechatpayapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" // WeChat Pay's hash_type: an integrity check of a download, not a signature
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
)

// DefaultBase is the API base (ONCELEDGER_WECHATPAY_API_BASE's default).
const DefaultBase = "https://api.mch.weixin.qq.com"

// The bills: their API paths.
const (
	TradeBill    = "tradebill"
	FundFlowBill = "fundflowbill"
)

// tolerance is the clock skew accepted on an answer's Wechatpay-Timestamp
// (wechatpay-go consts.FiveMinute).
const tolerance = 5 * time.Minute

// maxBillBytes bounds a download (decompressed).
const maxBillBytes = 1 << 30

var (
	// ErrHash is wrapped when a download's digest is not the hash_value the
	// API returned.
	ErrHash = errors.New("wechatpay api: the download's SHA1 is not the hash_value the API returned")
	// ErrSignature is wrapped when an answer's Wechatpay-Signature does not
	// verify.
	ErrSignature = errors.New("wechatpay api: the answer's signature does not verify")
	// ErrNoBill is wrapped when WeChat Pay has no bill for the day
	// (NO_STATEMENT_EXIST) or is still generating it (STATEMENT_CREATING).
	ErrNoBill = errors.New("wechatpay api: no bill")
)

// APIError is a non-2xx answer.
type APIError struct {
	Status        int
	Code, Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("wechatpay api: %d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap is ErrNoBill for the codes of a bill that is not (yet) there.
func (e *APIError) Unwrap() error {
	if e.Code == "NO_STATEMENT_EXIST" || e.Code == "STATEMENT_CREATING" {
		return ErrNoBill
	}
	return nil
}

// Client calls the API as one merchant. Safe for concurrent use.
type Client struct {
	base     *url.URL
	mchID    string
	serial   string
	key      *rsa.PrivateKey
	platform *wechatpay.ResponseVerifier
	http     *http.Client
	// Now is the clock of request timestamps and of the answers' check;
	// tests replace it.
	Now func() time.Time
	// Gzip asks for the bills gzip-compressed (tar_type=GZIP).
	Gzip bool
}

// New returns a client of the API at base (DefaultBase when "") for
// mchID, signing with the merchant API private key (PEM, PKCS #8 as
// apiclient_key.pem, or PKCS #1) whose certificate has serial, and
// verifying answers with the platform keys (wechatpay.ParseKeys' map).
func New(base, mchID, serial string, merchantKey []byte, platform map[string][]byte, hc *http.Client) (*Client, error) {
	if base == "" {
		base = DefaultBase
	}
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("wechatpay api: base %q is not an http(s) URL", base)
	}
	if strings.TrimSpace(mchID) == "" || strings.TrimSpace(serial) == "" {
		return nil, errors.New("wechatpay api: a merchant id and the merchant certificate's serial are needed")
	}
	key, err := parsePrivateKey(merchantKey)
	if err != nil {
		return nil, fmt.Errorf("wechatpay api: %s: %w", EnvMerchantPrivateKey, err)
	}
	v, err := wechatpay.NewResponseVerifier(platform, tolerance)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{base: u, mchID: strings.TrimSpace(mchID), serial: strings.TrimSpace(serial), key: key,
		platform: v, http: hc, Now: time.Now, Gzip: true}, nil
}

func parsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("not PEM")
	}
	var key any
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		if key, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			return nil, errors.New("not an RSA private key (PKCS #8 or PKCS #1)")
		}
	}
	k, ok := key.(*rsa.PrivateKey)
	if !ok || k.N.BitLen() < 2048 {
		return nil, errors.New("not an RSA-2048 private key")
	}
	return k, nil
}

// authorization is the Authorization header of a request with no body.
func (c *Client) authorization(method, requestURI string) (string, error) {
	nb := make([]byte, 16)
	if _, err := rand.Read(nb); err != nil {
		return "", err
	}
	nonce := strings.ToUpper(hex.EncodeToString(nb))
	ts := strconv.FormatInt(c.Now().Unix(), 10)
	digest := sha256.Sum256([]byte(method + "\n" + requestURI + "\n" + ts + "\n" + nonce + "\n" + "" + "\n"))
	sig, err := rsa.SignPKCS1v15(rand.Reader, c.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`WECHATPAY2-SHA256-RSA2048 mchid="%s",nonce_str="%s",timestamp="%s",serial_no="%s",signature="%s"`,
		c.mchID, nonce, ts, c.serial, base64.StdEncoding.EncodeToString(sig)), nil
}

// get sends a signed GET; the caller closes the body of a 2xx answer.
func (c *Client) get(ctx context.Context, u *url.URL) (*http.Response, error) {
	auth, err := c.authorization(http.MethodGet, u.RequestURI())
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("wechatpay api: GET %s: %w", u.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		e := &APIError{Status: resp.StatusCode}
		var w struct{ Code, Message string }
		if json.Unmarshal(body, &w) == nil {
			e.Code, e.Message = w.Code, w.Message
		}
		return nil, e
	}
	return resp, nil
}

// Ticket is a bill answer: where to download the bill and its digest.
type Ticket struct {
	HashType    string `json:"hash_type"`
	HashValue   string `json:"hash_value"`
	DownloadURL string `json:"download_url"`
}

// BillTicket asks for the day's bill of kind (TradeBill, FundFlowBill);
// date is YYYY-MM-DD. The answer's signature is checked before it is read.
func (c *Client) BillTicket(ctx context.Context, kind, date string) (Ticket, error) {
	q := url.Values{"bill_date": {date}}
	switch kind {
	case TradeBill:
		q.Set("bill_type", "ALL")
	case FundFlowBill:
		q.Set("account_type", "BASIC")
	default:
		return Ticket{}, fmt.Errorf("wechatpay api: unknown bill %q", kind)
	}
	if c.Gzip {
		q.Set("tar_type", "GZIP")
	}
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v3/bill/" + kind
	u.RawQuery = q.Encode()
	resp, err := c.get(ctx, &u)
	if err != nil {
		return Ticket{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Ticket{}, fmt.Errorf("wechatpay api: GET %s: %w", u.Path, err)
	}
	if err := c.platform.Verify(resp.Header, body, c.Now()); err != nil {
		return Ticket{}, fmt.Errorf("%w: GET %s: %v", ErrSignature, u.Path, err)
	}
	var t Ticket
	if err := json.Unmarshal(body, &t); err != nil {
		return Ticket{}, fmt.Errorf("wechatpay api: GET %s: %w", u.Path, err)
	}
	if !strings.EqualFold(t.HashType, "SHA1") || t.HashValue == "" || t.DownloadURL == "" {
		return Ticket{}, fmt.Errorf("wechatpay api: GET %s: answer without a SHA1 hash_value and a download_url", u.Path)
	}
	return t, nil
}

// Download writes the bill t names to w, decompressed, and fails with
// ErrHash, after writing, when its SHA1 is not t.HashValue: the caller
// must then discard what it wrote.
func (c *Client) Download(ctx context.Context, t Ticket, w io.Writer) error {
	u, err := url.Parse(t.DownloadURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("wechatpay api: download_url %q is not an http(s) URL", t.DownloadURL)
	}
	resp, err := c.get(ctx, u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r io.Reader
	br := bufio.NewReader(resp.Body)
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		// Bounded like an uploaded bill (report.DefaultLimits): the
		// download is the provider's, the bytes still may be a bomb.
		gz, err := report.Gunzip(br, report.DefaultLimits)
		if err != nil {
			return fmt.Errorf("wechatpay api: the download is not a readable gzip file: %w", err)
		}
		r = gz
	} else {
		r = br
	}
	h := sha1.New()
	if _, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, maxBillBytes)); err != nil {
		return fmt.Errorf("wechatpay api: downloading: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, t.HashValue) {
		return fmt.Errorf("%w (SHA1 %s, hash_value %s): the file was corrupted or altered in transit", ErrHash, got, t.HashValue)
	}
	return nil
}

// Bill is one downloaded bill.
type Bill struct {
	Kind string // TradeBill or FundFlowBill
	Path string // the bill as CSV
}

// Bills downloads the day's trade bill and fund-flow bill into dir, both
// before either is imported: a refused answer or download leaves nothing
// to import.
func (c *Client) Bills(ctx context.Context, date, dir string) ([]Bill, error) {
	if _, err := time.Parse(time.DateOnly, date); err != nil {
		return nil, fmt.Errorf("wechatpay api: bill date %q is not YYYY-MM-DD", date)
	}
	var out []Bill
	for _, kind := range []string{TradeBill, FundFlowBill} {
		t, err := c.BillTicket(ctx, kind, date)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, fmt.Sprintf("wechatpay-%s-%s.csv", kind, date))
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		err = c.Download(ctx, t, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(path)
			return nil, fmt.Errorf("%s %s: %w", kind, date, err)
		}
		out = append(out, Bill{Kind: kind, Path: path})
	}
	return out, nil
}
