package paypalipn

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

const receiver = "seller@onceledger.example"

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func mustNew(t testing.TB, emails ...string) *Adapter {
	t.Helper()
	a, err := New(emails)
	if err != nil {
		t.Fatal(err)
	}
	return a
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
			[]delivery.Fact{{Kind: delivery.KindFailed, Reason: "Denied"}}},
		{"new_case.txt", pay + ":new_case:PP-D-1234", "new_case", pay, time.Date(2026, 7, 1, 15, 0, 0, 0, time.UTC), nil},
	}
	for _, c := range cases {
		body := providertest.Fixture(t, c.file)
		evs, err := parse(a, body)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
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
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			keys[evs[0].DedupKey], hashes[evs[0].PayloadHash] = true, true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(keys) != 1 || len(hashes) != 1 {
		t.Fatalf("keys %v hashes %v", keys, hashes)
	}
	pending := strings.Replace(string(body), "payment_status=Completed", "payment_status=Pending&pending_reason=echeck", 1)
	evs, err := parse(a, []byte(pending))
	if err != nil {
		t.Fatal(err)
	}
	if keys[evs[0].DedupKey] {
		t.Fatal("Pending and Completed of one transaction share a dedup key")
	}
}

func TestReceiverEmail(t *testing.T) {
	body := providertest.Fixture(t, "completed.txt")
	if _, err := parse(mustNew(t, "other@onceledger.example"), body); !errors.Is(err, ErrUnknownReceiver) || !errors.Is(err, delivery.ErrMalformed) {
		t.Fatalf("unknown receiver: err %v, want ErrUnknownReceiver (400-class)", err)
	}
	// Case-insensitive: pending_authorization.txt says Seller@OnceLedger.example.
	if _, err := parse(mustNew(t, "other@x.example", receiver), providertest.Fixture(t, "pending_authorization.txt")); err != nil {
		t.Fatalf("case-insensitive receiver: %v", err)
	}
	noReceiver := strings.Replace(string(body), "receiver_email=seller%40onceledger.example&", "", 1)
	if _, err := parse(mustNew(t, receiver), []byte(noReceiver)); !errors.Is(err, delivery.ErrMissingField) {
		t.Fatalf("missing receiver: %v", err)
	}
	// A receiver in windows-1252 is decoded before comparing.
	latin := strings.Replace(string(body), "receiver_email=seller%40onceledger.example", "receiver_email=vend%E9e%40onceledger.example", 1)
	if _, err := parse(mustNew(t, "vendée@onceledger.example"), []byte(latin)); err != nil {
		t.Fatalf("windows-1252 receiver: %v", err)
	}
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
		if err != nil || got != c.want {
			t.Errorf("decode(%q, %s) = %q, %v; want %q", c.in, c.cs, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, cs string }{{"Jos\xe9", "UTF-8"}, {"\x81", "windows-1252"}, {"\xa4\xa4", "big5"}} {
		if _, err := decodeCharset(c.in, c.cs); err == nil {
			t.Errorf("decode(%q, %s) accepted", c.in, c.cs)
		}
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
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "20:12:59 Jan 13, 2026", "20:12:59 Jan 13, 2026 CET", "2026-01-13T20:12:59Z PST", "25:00:00 Jan 13, 2026 PST"} {
		if _, err := parsePaymentDate(in); !errors.Is(err, delivery.ErrMalformed) {
			t.Errorf("%q accepted (err %v)", in, err)
		}
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
	if err != nil {
		t.Fatal(err)
	}
	if !evs[0].Ignored() || evs[0].DedupKey != "ipn:ipn_track_id:77aa88bb" || evs[0].Type != "recurring_payment_profile_created" {
		t.Fatalf("got %+v", evs[0])
	}
	bare := []byte("receiver_email=seller%40onceledger.example&foo=bar")
	evs, err = parse(a, bare)
	if err != nil || !strings.HasPrefix(evs[0].DedupKey, "ipn:fp:") {
		t.Fatalf("fingerprint key: %+v %v", evs, err)
	}
}

func TestNew(t *testing.T) {
	if _, err := New([]string{" ", ""}); err == nil {
		t.Error("no receivers accepted")
	}
	if a, err := New([]string{receiver}); err != nil || a.Name() != "paypal-ipn" {
		t.Fatal(a, err)
	}
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
		if (err != nil) != c.wantErr || got != c.verdict {
			t.Errorf("%d %q: verdict %q err %v", c.status, c.answer, got, err)
		}
		if err != nil && !errors.Is(err, ErrPostback) {
			t.Errorf("%d %q: error %v does not wrap ErrPostback", c.status, c.answer, err)
		}
		if len(pb.bodies) != 1 {
			t.Fatalf("%d posts", len(pb.bodies))
		}
		if want := "cmd=_notify-validate&" + string(raw); string(pb.bodies[0]) != want {
			t.Errorf("posted %q, want %q", pb.bodies[0], want)
		}
		if pb.ctypes[0] != "application/x-www-form-urlencoded" {
			t.Errorf("content type %q", pb.ctypes[0])
		}
	}
}

func TestVerifierTransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	if _, err := (Verifier{URL: url}).Verify(context.Background(), []byte("a=b")); !errors.Is(err, ErrPostback) {
		t.Fatalf("closed server: %v", err)
	}
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
	if _, err := (Verifier{URL: slow.URL, Client: slow.Client()}).Verify(ctx, []byte("a=b")); !errors.Is(err, ErrPostback) {
		t.Fatalf("timeout: %v", err)
	}
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
			if evs != nil {
				t.Fatal("events with an error")
			}
			if !providertest.ClientError(err) {
				t.Fatalf("error is not 400-class: %v", err)
			}
			return
		}
		if len(evs) != 1 || evs[0].Validate() != nil || string(evs[0].Raw) != string(body) || evs[0].DedupKey == "" {
			t.Fatalf("bad event %+v", evs)
		}
	})
}
