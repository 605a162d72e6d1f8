package alipay

import (
	"testing"
)

// The cost of verifying and normalizing one Alipay notification (the
// published vector: an RSA2 signature over the sorted form, the fields):
// the server's share of an Alipay delivery before it is recorded (issue 40
// item 2).
//
//	go test -run '^$' -bench Parse -benchmem ./adapters/providers/alipay

func BenchmarkParse(b *testing.B) {
	a, err := New([][]byte{[]byte("-----BEGIN PUBLIC KEY-----\n" + vectorKey + "\n-----END PUBLIC KEY-----\n")}, []string{"2019073166072302"})
	if err != nil {
		b.Fatal(err)
	}
	body := encodeForm(vectorParams)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parse(a, body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseAllocations reports the allocations of one notification's
// verification and normalization.
func TestParseAllocations(t *testing.T) {
	a := vectorAdapter(t)
	body := encodeForm(vectorParams)
	if _, err := parse(a, body); err != nil {
		t.Fatal(err)
	}
	t.Logf("%.0f allocations per notification", testing.AllocsPerRun(50, func() { _, _ = parse(a, body) }))
}
