package wechatpay

import (
	"testing"
)

// The cost of verifying and normalizing one WeChat Pay notification (an
// RSA-SHA256 signature, an AES-256-GCM resource, the JSON): the server's
// share of a WeChat Pay delivery before it is recorded (issue 40 item 2).
//
//	go test -run '^$' -bench Parse -benchmem ./adapters/providers/wechatpay

func BenchmarkParse(b *testing.B) {
	a := adapter(b, nil)
	req := byCert(b, notification(b, apiKey, notifyID, EventTransactionSuccess, transaction(cents)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Parse(req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseAllocations reports the allocations of one notification's
// verification and normalization.
func TestParseAllocations(t *testing.T) {
	a := adapter(t, nil)
	req := byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, transaction(cents)))
	_, err := a.Parse(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.0f allocations per notification", testing.AllocsPerRun(50, func() { _, _ = a.Parse(req) }))
}
