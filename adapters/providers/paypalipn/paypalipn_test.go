package paypalipn

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

const receiver = "seller@onceledger.example"

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func mustNew(t testing.TB, emails ...string) *Adapter {
	t.Helper()
	return providertest.Adapter(t, New, emails)
}

func parse(a *Adapter, body []byte) ([]delivery.Event, error) {
	return a.Parse(providers.Request{Body: body, Now: now})
}

func TestParseSamples(t *testing.T) {
	a := mustNew(t, receiver)
	const pay = "61E67681CH3238416"
	cases := []struct {
		file, dedup, typ, key string
		at                    time.Time
		facts                 []delivery.Fact
	}{
		{"completed.txt", pay + ":Completed", "Completed", pay, time.Date(2026, 1, 14, 4, 12, 59, 0, time.UTC),
			[]delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: pay, Amount: 1995, Fee: 88, Currency: "USD"}}},
		{"refunded.txt", "4L103957RN0548412:Refunded", "Refunded", pay, time.Date(2026, 1, 15, 17, 15, 2, 0, time.UTC),
			[]delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: "4L103957RN0548412", Amount: 500, Currency: "USD"}}},
		{"reversed.txt", "8BA40285PP9182419:Reversed", "Reversed", pay, time.Date(2026, 7, 1, 18, 0, 0, 0, time.UTC),
			[]delivery.Fact{{Kind: delivery.KindDisputeOpened, BusinessID: "reversal-" + pay, Amount: 1995, Currency: "USD", Reason: "chargeback"}}},
		{"canceled_reversal.txt", "3GF57912KM1230717:Canceled_Reversal", "Canceled_Reversal", pay, time.Date(2026, 7, 20, 17, 30, 0, 0, time.UTC),
			[]delivery.Fact{{Kind: delivery.KindDisputeWon, BusinessID: "reversal-" + pay, Amount: 1995, Currency: "USD", Reason: "other"}}},
		{"pending_authorization.txt", "5HX63217YB0841931:Pending", "Pending", "5HX63217YB0841931", time.Date(2026, 11, 29, 7, 59, 59, 0, time.UTC),
			[]delivery.Fact{{Kind: delivery.KindAuthorized, Amount: 4200, Currency: "EUR", Reason: "authorization"}}},
		{"denied_windows1252.txt", "9KD59622XT1948720:Denied", "Denied", "9KD59622XT1948720", time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC),
			[]delivery.Fact{{Kind: delivery.KindFailed, Amount: 1200, Currency: "USD", Reason: "Denied"}}},
		{"new_case.txt", pay + ":new_case:PP-D-1234", "new_case", pay, time.Date(2026, 7, 1, 15, 0, 0, 0, time.UTC), nil},
	}
	for _, c := range cases {
		body := providertest.Fixture(t, c.file)
		evs, err := parse(a, body)
		if !assert.NoError(t, err, c.file) {
			continue
		}
		providertest.CheckEvent(t, c.file, evs[0], providertest.Want{
			Provider: "paypal", DedupKey: "ipn:" + c.dedup, Type: c.typ, PaymentKey: c.key, OccurredAt: c.at, Raw: body, Facts: c.facts,
		})
	}
}

// The incident behind the project: one transaction, three identical IPNs.
// All three must produce the same dedup key and payload hash, so the inbox's
// unique key lets exactly one through; a later status of the same
// transaction is a different message.
func TestThreeIdenticalIPNsShareOneKey(t *testing.T) {
	a := mustNew(t, receiver)
	body := providertest.Fixture(t, "completed.txt")
	var keys, hashes = map[string]bool{}, map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs, err := parse(a, append([]byte(nil), body...))
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			keys[evs[0].DedupKey], hashes[evs[0].PayloadHash] = true, true
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Len(t, keys, 1, "keys")
	require.Len(t, hashes, 1, "hashes")
	pending := strings.Replace(string(body), "payment_status=Completed", "payment_status=Pending&pending_reason=echeck", 1)
	evs, err := parse(a, []byte(pending))
	require.NoError(t, err)
	require.False(t, keys[evs[0].DedupKey], "Pending and Completed of one transaction share a dedup key")
}

func TestReceiverEmail(t *testing.T) {
	body := providertest.Fixture(t, "completed.txt")
	_, err := parse(mustNew(t, "other@onceledger.example"), body)
	require.ErrorIs(t, err, ErrUnknownReceiver, "unknown receiver")
	require.ErrorIs(t, err, delivery.ErrMalformed, "unknown receiver: want a 400-class error")
	// Case-insensitive: pending_authorization.txt says Seller@OnceLedger.example.
	_, err = parse(mustNew(t, "other@x.example", receiver), providertest.Fixture(t, "pending_authorization.txt"))
	require.NoError(t, err, "case-insensitive receiver")
	noReceiver := strings.Replace(string(body), "receiver_email=seller%40onceledger.example&", "", 1)
	_, err = parse(mustNew(t, receiver), []byte(noReceiver))
	require.ErrorIs(t, err, delivery.ErrMissingField, "missing receiver")
	// A receiver in windows-1252 is decoded before comparing.
	latin := strings.Replace(string(body), "receiver_email=seller%40onceledger.example", "receiver_email=vend%E9e%40onceledger.example", 1)
	_, err = parse(mustNew(t, "vendée@onceledger.example"), []byte(latin))
	require.NoError(t, err, "windows-1252 receiver")
}

func TestCharsets(t *testing.T) {
	cases := []struct{ in, cs, want string }{
		{"abc", "big5", "abc"},
		{"Jos\xe9", "windows-1252", "José"},
		{"\x80 \x9c", "windows-1252", "€ œ"},
		{"Jos\xe9", "ISO-8859-1", "José"},
		{"Ren\xc3\xa9e", "UTF-8", "Renée"},
		{"Ren\xc3\xa9e", "", "Renée"},
	}
	for _, c := range cases {
		got, err := decodeCharset(c.in, c.cs)
		if assert.NoErrorf(t, err, "decode(%q, %s)", c.in, c.cs) {
			assert.Equalf(t, c.want, got, "decode(%q, %s)", c.in, c.cs)
		}
	}
	for _, c := range []struct{ in, cs string }{{"Jos\xe9", "UTF-8"}, {"\x81", "windows-1252"}, {"\xa4\xa4", "big5"}} {
		_, err := decodeCharset(c.in, c.cs)
		assert.Errorf(t, err, "decode(%q, %s) accepted", c.in, c.cs)
	}
}

func TestPaymentDate(t *testing.T) {
	cases := map[string]time.Time{
		"20:12:59 Jan 13, 2026 PST": time.Date(2026, 1, 14, 4, 12, 59, 0, time.UTC),
		"08:00:00 Jul 1, 2026 PDT":  time.Date(2026, 7, 1, 15, 0, 0, 0, time.UTC),
		// The repeated autumn hour: the abbreviation tells the two apart.
		"01:30:00 Nov 1, 2026 PDT": time.Date(2026, 11, 1, 8, 30, 0, 0, time.UTC),
		"01:30:00 Nov 1, 2026 PST": time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC),
	}
	for in, want := range cases {
		got, err := parsePaymentDate(in)
		if assert.NoError(t, err, in) {
			assert.Truef(t, got.Equal(want), "%q: %v, want %v", in, got, want)
		}
	}
	for _, in := range []string{"", "20:12:59 Jan 13, 2026", "20:12:59 Jan 13, 2026 CET", "2026-01-13T20:12:59Z PST", "25:00:00 Jan 13, 2026 PST"} {
		_, err := parsePaymentDate(in)
		assert.ErrorIsf(t, err, delivery.ErrMalformed, "%q accepted", in)
	}
}

func TestNormalizationErrors(t *testing.T) {
	a := mustNew(t, receiver)
	edit := func(file, old, new string) []byte { return providertest.Edit(t, file, old, new) }
	cases := []struct {
		name   string
		body   []byte
		target error
		field  string
	}{
		{"excess decimals", edit("completed.txt", "mc_gross=19.95", "mc_gross=19.955"), delivery.ErrInvalidAmount, "mc_gross"},
		{"comma decimal", edit("completed.txt", "mc_gross=19.95", "mc_gross=19%2C95"), delivery.ErrInvalidAmount, "mc_gross"},
		{"jpy decimals", edit("completed.txt", "mc_currency=USD", "mc_currency=JPY"), delivery.ErrInvalidAmount, "mc_gross"},
		{"unknown currency", edit("completed.txt", "mc_currency=USD", "mc_currency=XYZ"), money.ErrUnknownCurrency, "mc_currency"},
		{"missing gross", edit("completed.txt", "mc_gross=19.95&", ""), delivery.ErrMissingField, "mc_gross"},
		{"fee over gross", edit("completed.txt", "mc_fee=0.88", "mc_fee=20.00"), delivery.ErrInvalidAmount, "fee"},
		{"missing date", edit("completed.txt", "payment_date=20%3A12%3A59+Jan+13%2C+2026+PST&", ""), delivery.ErrMissingField, "payment_date"},
		{"bad date", edit("completed.txt", "payment_date=20%3A12%3A59+Jan+13%2C+2026+PST", "payment_date=yesterday"), delivery.ErrMalformed, "payment_date"},
		{"refund without parent", edit("refunded.txt", "parent_txn_id=61E67681CH3238416&", ""), delivery.ErrMissingField, "parent_txn_id"},
		{"ambiguous txn_id", edit("completed.txt", "txn_id=61E67681CH3238416", "txn_id=61E67681CH3238416&txn_id=OTHER"), delivery.ErrMalformed, "txn_id"},
		// PayPal never repeats a field: even an equal repeat is refused, and so
		// is one of a field we do not read, or one spelled percent-encoded.
		{"txn_id repeated, same value", edit("completed.txt", "txn_id=61E67681CH3238416", "txn_id=61E67681CH3238416&txn_id=61E67681CH3238416"), delivery.ErrMalformed, `"txn_id" is sent 2 times`},
		{"mc_gross repeated", edit("completed.txt", "mc_gross=19.95", "mc_gross=1.00&mc_gross=19.95"), delivery.ErrMalformed, "mc_gross"},
		{"unread field repeated", edit("completed.txt", "custom=order-2001", "custom=order-2001&custom=order-2002&custom=x"), delivery.ErrMalformed, `"custom" is sent 3 times`},
		{"repeat spelled percent-encoded", edit("completed.txt", "mc_gross=19.95", "mc_gross=19.95&mc%5Fgross=1.00"), delivery.ErrMalformed, "mc_gross"},
		{"empty name repeated", edit("completed.txt", "tax=0.00", "tax=0.00&=a&=b"), delivery.ErrMalformed, `""`},
		{"bad escape", edit("completed.txt", "tax=0.00", "tax=%zz"), delivery.ErrMalformed, "form"},
		{"raw non-ascii", edit("completed.txt", "first_name=Test", "first_name=Jos\xe9"), delivery.ErrMalformed, "form"},
	}
	for _, c := range cases {
		evs, err := parse(a, c.body)
		providertest.CheckFieldError(t, c.name, evs, err, c.target, c.field)
	}
}

func TestMessagesWithoutTxnID(t *testing.T) {
	a := mustNew(t, receiver)
	body := []byte("txn_type=recurring_payment_profile_created&receiver_email=seller%40onceledger.example&ipn_track_id=77aa88bb&charset=UTF-8")
	evs, err := parse(a, body)
	require.NoError(t, err)
	require.Truef(t, evs[0].Ignored(), "got %+v", evs[0])
	require.Equal(t, "ipn:ipn_track_id:77aa88bb", evs[0].DedupKey)
	require.Equal(t, "recurring_payment_profile_created", evs[0].Type)
	bare := []byte("receiver_email=seller%40onceledger.example&foo=bar")
	evs, err = parse(a, bare)
	require.NoError(t, err, "fingerprint key")
	require.Truef(t, strings.HasPrefix(evs[0].DedupKey, "ipn:fp:"), "fingerprint key: %+v", evs)
}

func TestNew(t *testing.T) {
	_, err := New([]string{" ", ""})
	assert.Error(t, err, "no receivers accepted")
	a, err := New([]string{receiver})
	require.NoError(t, err)
	require.Equal(t, "paypal-ipn", a.Name())
}

// postback is a loopback stand-in for PayPal's verify endpoint that records
// exactly what it was sent.
type postback struct {
	mu     sync.Mutex
	bodies [][]byte
	ctypes []string
	status int
	answer string
}

func (p *postback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.bodies = append(p.bodies, b)
	p.ctypes = append(p.ctypes, r.Header.Get("Content-Type"))
	p.mu.Unlock()
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.WriteHeader(p.status)
	io.WriteString(w, p.answer)
}

func TestVerifierPostsBackExactBytes(t *testing.T) {
	// windows-1252 bytes, '+' for spaces, unusual field order: all must be
	// repeated exactly.
	raw := providertest.Fixture(t, "denied_windows1252.txt")
	cases := []struct {
		status  int
		answer  string
		verdict Verdict
		wantErr bool
	}{
		{200, "VERIFIED", Verified, false},
		{200, "INVALID", Invalid, false},
		{200, "VERIFIED\r\n", Verified, false},
		{500, "VERIFIED", "", true},
		{200, "<html>maintenance</html>", "", true},
		{200, "", "", true},
		{302, "", "", true},
	}
	for _, c := range cases {
		pb := &postback{status: c.status, answer: c.answer}
		srv := httptest.NewServer(pb)
		v := Verifier{URL: srv.URL + "/cgi-bin/webscr", Client: srv.Client()}
		got, err := v.Verify(context.Background(), raw)
		srv.Close()
		if c.wantErr {
			assert.ErrorIsf(t, err, ErrPostback, "%d %q", c.status, c.answer)
		} else {
			assert.NoErrorf(t, err, "%d %q", c.status, c.answer)
		}
		assert.Equalf(t, c.verdict, got, "%d %q: verdict", c.status, c.answer)
		require.Len(t, pb.bodies, 1, "posts")
		assert.Equal(t, "cmd=_notify-validate&"+string(raw), string(pb.bodies[0]), "posted")
		assert.Equal(t, "application/x-www-form-urlencoded", pb.ctypes[0], "content type")
	}
}

func TestVerifierTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	_, err := (Verifier{URL: url}).Verify(context.Background(), []byte("a=b"))
	require.ErrorIs(t, err, ErrPostback, "closed server")
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release) // runs first: lets the handler return so Close does not wait
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = (Verifier{URL: slow.URL, Client: slow.Client()}).Verify(ctx, []byte("a=b"))
	require.ErrorIs(t, err, ErrPostback, "timeout")
}

// An IPN is never trusted by Parse alone; FuzzPayPalIPNParse checks Parse
// never panics, keeps the raw bytes, and only returns valid events.
func FuzzPayPalIPNParse(f *testing.F) {
	for _, name := range []string{"completed.txt", "refunded.txt", "reversed.txt", "canceled_reversal.txt", "pending_authorization.txt", "denied_windows1252.txt", "new_case.txt"} {
		f.Add(providertest.Fixture(f, name))
	}
	f.Add([]byte("txn_id=A&txn_id=A&payment_status=Completed&receiver_email=seller%40onceledger.example"))
	f.Add([]byte("mc_gross=1.00&mc%5Fgross=2.00&receiver_email=seller%40onceledger.example&=&="))
	a := mustNew(f, receiver)
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := parse(a, body)
		if err != nil {
			require.Nil(t, evs, "events with an error")
			require.Truef(t, providertest.ClientError(err), "error is not 400-class: %v", err)
			return
		}
		require.Lenf(t, evs, 1, "bad event %+v", evs)
		require.NoErrorf(t, evs[0].Validate(), "bad event %+v", evs)
		require.Equalf(t, string(body), string(evs[0].Raw), "bad event %+v", evs)
		require.NotEmptyf(t, evs[0].DedupKey, "bad event %+v", evs)
	})
}
