// Package wechatpayfake is a test double of WeChat Pay's API v3, for the
// calls settle sync wechatpay makes: GET /v3/bill/tradebill, GET
// /v3/bill/fundflowbill and the download they point at
// (/v3/billdownload/file?token=…). It speaks the documented protocol,
// written apart from the client (wechatpayapi): it checks every request's
// Authorization (WECHATPAY2-SHA256-RSA2048, the merchant key's signature
// over METHOD\nURI\ntimestamp\nnonce\nbody\n, mchid and serial_no), signs
// its JSON answers with a WeChat Pay public key of its own (Wechatpay-Serial
// PUB_KEY_ID_…), answers a download unsigned with the bill, gzipped when
// tar_type=GZIP was asked, and hash_value the SHA1 of the bill as given.
// Corrupt makes it serve altered bytes under the same hash_value.
package wechatpayfake

import (
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" // WeChat Pay's hash_type
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// KeyID is the id of the double's WeChat Pay public key, as
// Wechatpay-Serial names it.
const KeyID = "PUB_KEY_ID_0112345678901234567890123456789012"

// Fake is the double; an http.Handler (serve it with httptest.NewServer
// and give the client its URL as the API base).
type Fake struct {
	mchID       string
	serial      string
	merchantKey *rsa.PublicKey
	key         *rsa.PrivateKey

	mu      sync.Mutex
	bills   map[string][]byte // kind/date → bill
	tokens  map[string]download
	badSign *rsa.PrivateKey
	corrupt bool
	// Now is the clock of answer timestamps and of the requests' check.
	Now func() time.Time
	// AnswerSkew shifts the answers' Wechatpay-Timestamp (an answer replayed
	// later, or a clock far off).
	AnswerSkew time.Duration
	// Requests counts requests that passed the Authorization check.
	Requests int
	// txns and queries: the transaction query (transactions.go).
	txns    map[string]Transaction
	queries map[string]int
}

type download struct {
	bill []byte
	gzip bool
}

// New returns a double of merchant mchID whose API certificate has serial
// and the public key merchantKey, with a fresh RSA-2048 WeChat Pay key.
func New(mchID, serial string, merchantKey *rsa.PublicKey) (*Fake, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Fake{mchID: mchID, serial: serial, merchantKey: merchantKey, key: k,
		bills: map[string][]byte{}, tokens: map[string]download{}, Now: time.Now}, nil
}

// PublicKeyPEM is the double's WeChat Pay public key (SPKI PEM), to
// configure as KeyID=FILE in ONCELEDGER_WECHATPAY_KEYS.
func (f *Fake) PublicKeyPEM() []byte {
	der, _ := x509.MarshalPKIXPublicKey(&f.key.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// AddBill makes bill the day's (date YYYY-MM-DD) bill of kind
// ("tradebill", "fundflowbill").
func (f *Fake) AddBill(kind, date string, bill []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bills[kind+"/"+date] = bill
}

// Corrupt makes downloads serve the bill with one byte changed (on), or as
// it is (off); hash_value stays the bill's.
func (f *Fake) Corrupt(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.corrupt = on
}

// SignWithWrongKey makes the double sign its answers with a key that is
// not PublicKeyPEM's (on), or its own again (off).
func (f *Fake) SignWithWrongKey(on bool) error {
	var k *rsa.PrivateKey
	if on {
		var err error
		if k, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.badSign = k
	return nil
}

// ServeHTTP serves the bill APIs and the downloads.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		f.fail(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "GET only")
		return
	}
	if msg := f.checkAuthorization(r); msg != "" {
		f.fail(w, http.StatusUnauthorized, "SIGN_ERROR", msg)
		return
	}
	f.mu.Lock()
	f.Requests++
	f.mu.Unlock()
	switch r.URL.Path {
	case "/v3/bill/tradebill", "/v3/bill/fundflowbill":
		f.ticket(w, r)
	case "/v3/billdownload/file":
		f.download(w, r)
	default:
		if !f.transaction(w, r) { // transactions.go
			f.fail(w, http.StatusNotFound, "NOT_FOUND", "no such API")
		}
	}
}

// checkAuthorization returns what is wrong with the request's
// Authorization, "" when it verifies.
func (f *Fake) checkAuthorization(r *http.Request) string {
	scheme, params, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || scheme != "WECHATPAY2-SHA256-RSA2048" {
		return "Authorization is not WECHATPAY2-SHA256-RSA2048"
	}
	p := map[string]string{}
	for _, kv := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		p[k] = strings.Trim(v, `"`)
	}
	if p["mchid"] != f.mchID || p["serial_no"] != f.serial {
		return "mchid or serial_no is not the merchant's"
	}
	ts, err := strconv.ParseInt(p["timestamp"], 10, 64)
	if err != nil || f.Now().Sub(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return "timestamp is stale"
	}
	sig, err := base64.StdEncoding.DecodeString(p["signature"])
	if err != nil || p["nonce_str"] == "" {
		return "no signature or nonce"
	}
	msg := fmt.Sprintf("%s\n%s\n%s\n%s\n\n", r.Method, r.URL.RequestURI(), p["timestamp"], p["nonce_str"])
	sum := sha256.Sum256([]byte(msg))
	if rsa.VerifyPKCS1v15(f.merchantKey, crypto.SHA256, sum[:], sig) != nil {
		return "signature does not verify"
	}
	return ""
}

// ticket answers a bill API: hash and download URL.
func (f *Fake) ticket(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind := strings.TrimPrefix(r.URL.Path, "/v3/bill/")
	if kind == "tradebill" && q.Get("bill_type") != "" && q.Get("bill_type") != "ALL" {
		f.fail(w, http.StatusBadRequest, "PARAM_ERROR", "the double serves bill_type=ALL")
		return
	}
	f.mu.Lock()
	bill, ok := f.bills[kind+"/"+q.Get("bill_date")]
	token := strconv.Itoa(len(f.tokens) + 1)
	if ok {
		f.tokens[token] = download{bill: bill, gzip: q.Get("tar_type") == "GZIP"}
	}
	f.mu.Unlock()
	if !ok {
		f.fail(w, http.StatusBadRequest, "NO_STATEMENT_EXIST", "账单文件不存在")
		return
	}
	sum := sha1.Sum(bill)
	u := url.URL{Scheme: "http", Host: r.Host, Path: "/v3/billdownload/file", RawQuery: url.Values{"token": {token}}.Encode()}
	f.answer(w, http.StatusOK, map[string]string{"hash_type": "SHA1", "hash_value": hex.EncodeToString(sum[:]), "download_url": u.String()})
}

// download serves a bill, unsigned as WeChat Pay serves it.
func (f *Fake) download(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	d, ok := f.tokens[r.URL.Query().Get("token")]
	corrupt := f.corrupt
	f.mu.Unlock()
	if !ok {
		f.fail(w, http.StatusBadRequest, "PARAM_ERROR", "unknown token")
		return
	}
	b := bytes.Clone(d.bill)
	if corrupt && len(b) > 0 {
		b[len(b)/2] ^= 0x01
	}
	if d.gzip {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		_, _ = gz.Write(b)
		_ = gz.Close()
		b = buf.Bytes()
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(b)
}

func (f *Fake) fail(w http.ResponseWriter, status int, code, msg string) {
	f.answer(w, status, map[string]string{"code": code, "message": msg})
}

// answer writes a signed JSON answer.
func (f *Fake) answer(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	f.mu.Lock()
	k := f.key
	if f.badSign != nil {
		k = f.badSign
	}
	f.mu.Unlock()
	nb := make([]byte, 16)
	_, _ = rand.Read(nb)
	nonce := hex.EncodeToString(nb)
	ts := strconv.FormatInt(f.Now().Add(f.AnswerSkew).Unix(), 10)
	sum := sha256.Sum256([]byte(ts + "\n" + nonce + "\n" + string(body) + "\n"))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Wechatpay-Timestamp", ts)
	h.Set("Wechatpay-Nonce", nonce)
	h.Set("Wechatpay-Signature", base64.StdEncoding.EncodeToString(sig))
	h.Set("Wechatpay-Serial", KeyID)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
