package alipay

import (
	"bytes"
	"testing"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// FuzzParse: Parse never panics and every error is one the HTTP layer maps
// to 401 or 400. Nothing the fuzzer makes up is accepted unless it carries
// a true signature: the only bodies that may parse are the seeds' own
// signed bodies, unchanged in every signed parameter (a fuzzer cannot forge
// RSA2), so an accepted body must verify with the test key and name the
// configured app.
func FuzzParse(f *testing.F) {
	testKeys(f)
	a := newAdapter(f)
	signs := map[string]bool{} // the signatures of the signed seeds
	for _, b := range [][]byte{
		signedBody(f, notification(), signOpts{}),
		signedBody(f, notification(kv{"out_biz_no", "r-1"}, kv{"refund_fee", "1.00"}), signOpts{}),
		signedBody(f, notification(kv{"trade_status", "TRADE_CLOSED"}), signOpts{}),
		signedBody(f, notification(kv{"charset", "gbk"}, kv{"subject", "语雀"}), signOpts{gbk: true}),
		signedBody(f, notification(kv{"subject", "a+b c"}), signOpts{literal: true}),
	} {
		frm, err := parseForm(b)
		if err != nil {
			f.Fatal(err)
		}
		signs[frm.get("sign")] = true
		f.Add(b)
	}
	f.Add(encodeForm(notification()))
	f.Add([]byte("sign=&sign_type=RSA2"))
	f.Add([]byte("a=%zz&&=&sign=+++&sign_type=RSA2&sign_type=RSA2"))
	f.Add(bytes.Repeat([]byte("&"), MaxParams+1))
	f.Fuzz(func(t *testing.T, body []byte) {
		evs, err := a.Parse(providers.Request{Body: body})
		if err != nil {
			if !providertest.Documented(err) {
				t.Fatalf("undocumented error %v", err)
			}
			if evs != nil {
				t.Fatalf("events with an error")
			}
			return
		}
		// Accepted: it must be a signed body of ours.
		frm, ferr := parseForm(body)
		if ferr != nil {
			t.Fatalf("accepted a body that does not parse: %v", ferr)
		}
		sig := frm.get("sign")
		if !signs[sig] || frm.get("sign_type") != SignType || frm.get("app_id") != appID {
			t.Fatalf("accepted an unsigned body %q", body)
		}
		if len(evs) != 1 {
			t.Fatalf("%d events", len(evs))
		}
		providertest.RequireBound(t, evs[0], "alipay", body)
		if err := evs[0].Validate(); err != nil {
			t.Fatalf("invalid event: %v", err)
		}
		// Renormalizing the stored bytes gives the same event.
		again, err := a.Renormalize(evs[0].DedupKey, body)
		if err != nil {
			t.Fatalf("renormalize: %v", err)
		}
		if again.FactsHash() != evs[0].FactsHash() {
			t.Fatalf("renormalized facts differ")
		}
	})
}
