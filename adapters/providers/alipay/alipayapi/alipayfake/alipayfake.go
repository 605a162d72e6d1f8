// Package alipayfake is a test double of Alipay's OpenAPI gateway, for the
// one API settle sync alipay calls: alipay.data.dataservice.bill.downloadurl.query
// and the bill download it points at. It speaks the documented protocol,
// written apart from the client (alipayapi) so that a mistake in one is not
// repeated in the other: it checks the request's RSA2 signature with the
// app's public key (every parameter but sign, sorted, k=v&…), signs its
// answers with its own "Alipay" key over the response object's text, and
// serves the bills it was given as bill_download_url.
package alipayfake

import (
	"archive/zip"
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// method and responseKey as Alipay names them.
const (
	method      = "alipay.data.dataservice.bill.downloadurl.query"
	responseKey = "alipay_data_dataservice_bill_downloadurl_query_response"
)

// Fake is the double; an http.Handler (serve it with httptest.NewServer
// and give the client its URL + "/gateway.do").
type Fake struct {
	appID  string
	appKey *rsa.PublicKey
	key    *rsa.PrivateKey // "Alipay's" key, which signs the answers

	mu    sync.Mutex
	bills map[string][]byte // bill_type/bill_date → zip
	files map[string][]byte // fileId → zip
	// badSign signs answers with another key than PublicKeyPEM's.
	badSign *rsa.PrivateKey
	// Requests counts the gateway calls that passed the signature check.
	Requests int
	// trades and queries: alipay.trade.query (tradequery.go).
	trades  map[string]Trade
	queries map[string]int
}

// New returns a double accepting requests of appID signed by the private
// key of appKey, with a fresh RSA-2048 key of its own.
func New(appID string, appKey *rsa.PublicKey) (*Fake, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Fake{appID: appID, appKey: appKey, key: k, bills: map[string][]byte{}, files: map[string][]byte{}}, nil
}

// PublicKeyPEM is the double's public key, as Alipay's console gives
// Alipay's (SPKI PEM): configure it as ONCELEDGER_ALIPAY_PUBLIC_KEYS.
func (f *Fake) PublicKeyPEM() []byte {
	der, _ := x509.MarshalPKIXPublicKey(&f.key.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// AddBill makes the .csv.zip the bill of billType (trade, signcustomer)
// for date (YYYY-MM-DD).
func (f *Fake) AddBill(billType, date string, zipBytes []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bills[billType+"/"+date] = zipBytes
}

// SignWithWrongKey makes the double sign its answers with a key that is
// not PublicKeyPEM's (on) or its own again (off).
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

// Zip packs CSV files into a bill archive as Alipay builds it: entry names
// in GBK without the UTF-8 flag.
func Zip(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		gbk, err := simplifiedchinese.GBK.NewEncoder().String(n)
		if err != nil {
			return nil, err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: gbk, NonUTF8: true, Method: zip.Deflate})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ServeHTTP serves POST /gateway.do and GET /downloadBillFile.resource.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/gateway.do" && r.Method == http.MethodPost:
		f.gateway(w, r)
	case r.URL.Path == "/downloadBillFile.resource" && r.Method == http.MethodGet:
		f.mu.Lock()
		b, ok := f.files[r.URL.Query().Get("fileId")]
		f.mu.Unlock()
		if !ok {
			http.Error(w, "file not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/oct-stream")
		_, _ = w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

// gateway answers the bill download URL query.
func (f *Fake) gateway(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p := r.PostForm
	if p.Get("app_id") != f.appID {
		f.answer(w, "error_response", map[string]string{"code": "40002", "msg": "Invalid Arguments", "sub_code": "isv.invalid-app-id", "sub_msg": "无效的AppID参数"})
		return
	}
	if p.Get("sign_type") != "RSA2" || !f.verify(p) {
		f.answer(w, responseKey, map[string]string{"code": "40002", "msg": "Invalid Arguments", "sub_code": "isv.invalid-signature", "sub_msg": "验签出错"})
		return
	}
	if p.Get("method") == queryMethod && p.Get("format") == "JSON" && p.Get("version") == "1.0" {
		f.tradeQuery(w, r, p) // tradequery.go
		return
	}
	if p.Get("method") != method || p.Get("format") != "JSON" || p.Get("version") != "1.0" || p.Get("timestamp") == "" {
		f.answer(w, responseKey, map[string]string{"code": "40002", "msg": "Invalid Arguments", "sub_code": "isv.missing-method"})
		return
	}
	var biz struct {
		BillType string `json:"bill_type"`
		BillDate string `json:"bill_date"`
	}
	if err := json.Unmarshal([]byte(p.Get("biz_content")), &biz); err != nil {
		f.answer(w, responseKey, map[string]string{"code": "40004", "msg": "Business Failed", "sub_code": "isv.invalid-parameter"})
		return
	}
	f.mu.Lock()
	f.Requests++
	b, ok := f.bills[biz.BillType+"/"+biz.BillDate]
	id := fmt.Sprintf("%d", len(f.files)+1)
	if ok {
		f.files[id] = b
	}
	f.mu.Unlock()
	if !ok {
		f.answer(w, responseKey, map[string]string{"code": "40004", "msg": "Business Failed", "sub_code": "isp.bill_not_exist", "sub_msg": "账单不存在"})
		return
	}
	u := url.URL{Scheme: "http", Host: r.Host, Path: "/downloadBillFile.resource", RawQuery: url.Values{
		"bizType": {biz.BillType}, "fileType": {"csv.zip"}, "bizDates": {strings.ReplaceAll(biz.BillDate, "-", "")}, "fileId": {id},
	}.Encode()}
	f.answer(w, responseKey, map[string]string{"code": "10000", "msg": "Success", "bill_download_url": u.String()})
}

// verify checks the request's sign: every parameter but sign, non-empty,
// sorted by key, k=v joined by '&'.
func (f *Fake) verify(p url.Values) bool {
	var pairs []string
	for k, vs := range p {
		if k == "sign" || len(vs) == 0 || vs[0] == "" {
			continue
		}
		pairs = append(pairs, k+"="+vs[0])
	}
	sort.Strings(pairs)
	sig, err := base64.StdEncoding.DecodeString(p.Get("sign"))
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(strings.Join(pairs, "&")))
	return rsa.VerifyPKCS1v15(f.appKey, crypto.SHA256, sum[:], sig) == nil
}

// answer writes {"<key>": obj, "sign": RSA2(obj's text)}.
func (f *Fake) answer(w http.ResponseWriter, key string, obj map[string]string) {
	body, _ := json.Marshal(obj)
	f.mu.Lock()
	k := f.key
	if f.badSign != nil {
		k = f.badSign
	}
	f.mu.Unlock()
	sum := sha256.Sum256(body)
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	keyJSON, _ := json.Marshal(key)
	w.Header().Set("Content-Type", "text/html;charset=utf-8")
	fmt.Fprintf(w, `{%s:%s,"sign":%q}`, keyJSON, body, base64.StdEncoding.EncodeToString(sig))
}
