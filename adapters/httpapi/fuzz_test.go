package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http/httpguts"

	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/adyen"
	"github.com/onceledger/onceledger/adapters/providers/circle"
	"github.com/onceledger/onceledger/adapters/providers/paypal"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/adapters/providers/square"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/adapters/providers/stripe"
	"github.com/onceledger/onceledger/domain/delivery"
)

// guard is the fuzz target's Ingester: nothing can be signed without the
// keys, so no input may ever reach Ingest; only a form the IPN listener
// parses may be held (IPN is unsigned: holding it unverified is its
// contract), and only as a valid delivery.
type guard struct {
	mu     sync.Mutex
	stored []string
}

func (g *guard) Ingest(_ context.Context, ev delivery.Event) (ingest.Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stored = append(g.stored, "ingest "+ev.Provider+" "+ev.DedupKey)
	return ingest.Result{Outcome: ingest.Accepted}, nil
}

func (g *guard) Hold(_ context.Context, ev delivery.Event) (ingest.Result, error) {
	if err := ev.Validate(); err != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.stored = append(g.stored, "invalid hold "+ev.DedupKey+": "+err.Error())
	}
	return ingest.Result{Outcome: ingest.Accepted}, nil
}

func (g *guard) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.stored
	g.stored = nil
	return out
}

var fuzzProviders = []string{"stripe", "standard", "adyen", "paypal", "square", "circle", "paypal-ipn", "unknown"}

var fuzzMethods = []string{http.MethodPost, http.MethodGet, http.MethodPut, http.MethodHead, http.MethodDelete, http.MethodOptions, "PATCH"}

// signatureHeaders are the headers the providers read, for the fuzzer to
// set: a header name comes from this list (by index) or is the fuzzer's own.
var signatureHeaders = []string{
	"Stripe-Signature", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature",
	"Paypal-Transmission-Id", "Paypal-Transmission-Time", "Paypal-Transmission-Sig", "Paypal-Cert-Url", "Paypal-Auth-Algo",
	"X-Square-Hmacsha256-Signature", "X-Square-Signature", "X-Circle-Signature", "X-Circle-Key-Id", "Content-Encoding",
}

func fuzzHandler(t testing.TB, g *guard) http.Handler {
	t.Helper()
	st, err := stripe.New([]string{"whsec_fuzz_secret"}, 5*time.Minute)
	require.NoError(t, err)
	sw, err := standard.New([]string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("fuzz-secret-0123456789abcdef"))}, 5*time.Minute)
	require.NoError(t, err)
	// Keys of this test only: no test vector in the seeds is signed with them.
	ad, err := adyen.New([]string{"0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"})
	require.NoError(t, err)
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "messageverificationcerts.paypal.com"},
		NotBefore: time.Now().AddDate(-1, 0, 0), NotAfter: time.Now().AddDate(1, 0, 0), KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	pp, err := paypal.New("8PT597110X687430LKGECATA", [][]byte{pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, 5*time.Minute)
	require.NoError(t, err)
	sq, err := square.New([]string{"w7Xq9v1c3pLm0ZbN5tRy2A"}, "https://example.com/webhooks/square")
	require.NoError(t, err)
	ck, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	spki, err := x509.MarshalPKIXPublicKey(&ck.PublicKey)
	require.NoError(t, err)
	ci, err := circle.New(map[string]string{"0f6a3a4e-8f1b-4c5d-9e2f-3a4b5c6d7e8f": base64.StdEncoding.EncodeToString(spki)})
	require.NoError(t, err)
	ipn, err := paypalipn.New([]string{"seller@onceledger.example"})
	require.NoError(t, err)
	return httpapi.NewHandler(httpapi.Config{
		Providers: map[string]providers.Adapter{
			stripe.Name: st, standard.Name: sw, adyen.Name: ad, paypal.Name: pp, square.Name: sq, circle.Name: ci, paypalipn.Name: ipn,
		},
		Ingester:            g,
		MaxBodyBytes:        16 << 10,
		ProviderConcurrency: -1,
		Logger:              slog.New(slog.DiscardHandler),
	})
}

// FuzzWebhookEdge drives POST /webhooks/{provider} (and other methods) over
// a real socket with fuzzed headers, content types and bodies, truncated at
// any point, for every provider: nothing panics (a panic would be a 503),
// no input is answered 5xx, and nothing unsigned is recorded. The seeds
// (every provider's test vectors, whole and truncated) run in `make test`.
func FuzzWebhookEdge(f *testing.F) {
	seed := func(provider, method uint8, contentType string, header uint8, value string, body []byte, cut uint16) {
		f.Add(provider, method, contentType, header, value, body, cut)
	}
	dirs := map[string]uint8{"stripe": 0, "standard": 1, "adyen": 2, "paypal": 3, "square": 4, "circle": 5, "paypalipn": 6}
	for dir, p := range dirs {
		files, _ := filepath.Glob(filepath.Join("..", "providers", dir, "testdata", "*"))
		for i, file := range files {
			if st, err := os.Stat(file); err == nil && st.IsDir() {
				continue // testdata/settlement: report files, not webhooks
			}
			body, err := os.ReadFile(file)
			require.NoError(f, err)
			ct := "application/json"
			if dir == "paypalipn" {
				ct = "application/x-www-form-urlencoded"
			}
			seed(p, 0, ct, uint8(i), "t=1,v1=00", body, 0)
			seed(p, 0, ct, uint8(i), "", body, uint16(len(body)/2))
		}
		seed(p, 0, "application/json", 0, "", []byte(`{"type":"payment.captured","data":{"amount":1e400}}`), 0)
		seed(p, 0, "text/plain; charset=utf-16", 3, "v1,AAAA", []byte("\xff\xfe\x00{"), 0)
		seed(p, 1, "", 0, "", nil, 0)
	}
	seed(6, 0, "application/x-www-form-urlencoded", 0, "",
		[]byte("txn_id=1&txn_id=2&receiver_email=seller%40onceledger.example&payment_status=Completed&mc_gross=1.00&mc_currency=USD"), 0)
	seed(6, 0, "application/x-www-form-urlencoded", 0, "",
		[]byte("mc_gross=-0.00&payment_status=Refunded&receiver_email=seller%40onceledger.example&txn_id=X&mc_currency=XXX&charset=bogus"), 0)
	seed(7, 0, "application/json", 0, "", []byte("{}"), 0)

	g := &guard{}
	srv := httptest.NewServer(fuzzHandler(f, g))
	f.Cleanup(srv.Close)
	// A request the server never answers is a failure too.
	client := &http.Client{Timeout: 10 * time.Second}

	f.Fuzz(func(t *testing.T, provider, method uint8, contentType string, header uint8, value string, body []byte, cut uint16) {
		if !httpguts.ValidHeaderFieldValue(contentType) || !httpguts.ValidHeaderFieldValue(value) {
			t.Skip("not a header value an HTTP client can send")
		}
		name := fuzzProviders[int(provider)%len(fuzzProviders)]
		if cut > 0 && int(cut) < len(body) {
			body = body[:cut]
		}
		req, err := http.NewRequest(fuzzMethods[int(method)%len(fuzzMethods)], srv.URL+"/webhooks/"+name, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", contentType)
		req.Header.Set(signatureHeaders[int(header)%len(signatureHeaders)], value)
		resp, err := client.Do(req)
		require.NoError(t, err)
		answer, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Less(t, resp.StatusCode, 500, "%s %s: %s", req.Method, name, answer)
		require.Empty(t, g.take(), "nothing unsigned is recorded")
	})
}
