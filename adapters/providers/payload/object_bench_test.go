package payload_test

import (
	"os"
	"testing"

	"github.com/onceledger/onceledger/adapters/providers/payload"
)

// BenchmarkDecodeObject decodes a Stripe charge.succeeded delivery, as every
// Stripe webhook does (go test -bench DecodeObject ./adapters/providers/payload).
func BenchmarkDecodeObject(b *testing.B) {
	raw, err := os.ReadFile("../stripe/testdata/charge.succeeded.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := payload.DecodeObject(raw); err != nil {
			b.Fatal(err)
		}
	}
}
