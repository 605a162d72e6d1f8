package stripe

import (
	"io"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/report"
)

// reportGenerator streams an itemized payout reconciliation report of n
// lines without holding it in memory: the benchmark measures the parser,
// not the generator's buffer.
type reportGenerator struct {
	n, i int
	buf  []byte
	off  int
}

const benchHeader = "automatic_payout_id,automatic_payout_effective_at,balance_transaction_id,created_utc,created,available_on_utc,available_on,currency,gross,fee,net,reporting_category,source_id,description,customer_facing_amount,customer_facing_currency,customer_id,customer_email,charge_id,payment_intent_id,payment_method_type,card_brand,payment_metadata[order_id]\n"

func (g *reportGenerator) Read(p []byte) (int, error) {
	for g.off >= len(g.buf) {
		if g.i > g.n {
			return 0, io.EOF
		}
		g.buf, g.off = g.buf[:0], 0
		if g.i == 0 {
			g.buf = append(g.buf, benchHeader...)
		}
		for k := 0; k < 256 && g.i < g.n; k++ {
			g.i++
			id := strconv.Itoa(g.i)
			cents := 1000 + g.i%9000
			fee := 30 + cents*29/1000
			g.buf = append(g.buf, "po_1QzPoU2eZvKYlo2CxPaYoUt"...)
			g.buf = strconv.AppendInt(g.buf, int64(g.i/10000), 10)
			g.buf = append(g.buf, ",2026-12-03 00:00:00,txn_3QxYzA2eZvKYlo2C"...)
			g.buf = append(g.buf, id...)
			g.buf = append(g.buf, ",2026-11-29 09:59:59,2026-11-29 09:59:59,2026-12-01 00:00:00,2026-12-01 00:00:00,usd,"...)
			g.buf = appendMajor(g.buf, cents)
			g.buf = append(g.buf, ',')
			g.buf = appendMajor(g.buf, fee)
			g.buf = append(g.buf, ',')
			g.buf = appendMajor(g.buf, cents-fee)
			g.buf = append(g.buf, ",charge,ch_3QxYzA2eZvKYlo2C"...)
			g.buf = append(g.buf, id...)
			g.buf = append(g.buf, ",Order #"...)
			g.buf = append(g.buf, id...)
			g.buf = append(g.buf, ',')
			g.buf = appendMajor(g.buf, cents)
			g.buf = append(g.buf, ",usd,cus_RqT0a1b2c3d4e5,jenny.rosen@example.com,ch_3QxYzA2eZvKYlo2C"...)
			g.buf = append(g.buf, id...)
			g.buf = append(g.buf, ",pi_3QxYzA2eZvKYlo2C"...)
			g.buf = append(g.buf, id...)
			g.buf = append(g.buf, ",card,visa,"...)
			g.buf = append(g.buf, id...)
			g.buf = append(g.buf, '\n')
		}
		if g.i == g.n {
			g.i++ // the last chunk is out; EOF next
		}
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}

func appendMajor(b []byte, cents int) []byte {
	b = strconv.AppendInt(b, int64(cents/100), 10)
	b = append(b, '.')
	if c := cents % 100; c < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(cents%100), 10)
}

// BenchmarkParseReport1M parses a generated 1,000,000-line itemized payout
// reconciliation report per iteration and reports lines per second, bytes
// and allocations per line, and the peak heap in use. The import as a whole
// (inbox, decide, append) must reach 50,000 lines/s within 256 MiB RSS; the
// parser has to be far faster than that and stream in bounded memory.
func BenchmarkParseReport1M(b *testing.B) {
	const lines = 1_000_000
	b.ReportAllocs()
	var peak uint64
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		n := 0
		err := ParseReport(&reportGenerator{n: lines}, report.Options{}, func(r report.Record) error {
			n++
			if n%100_000 == 0 {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			return nil
		})
		total += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if n != lines {
			b.Fatalf("parsed %d lines, want %d", n, lines)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/total.Seconds(), "lines/s")
	b.ReportMetric(float64(peak)/(1<<20), "MiB-heap-peak")
}
