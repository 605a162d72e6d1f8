// Command settlegen writes a Stripe itemized payout reconciliation report
// (CSV, the columns `onceledger settle import --provider stripe` reads) of
// N charge lines (or, with -fees, fee rows: payout-only lines, all on their
// payout's stream), 1,000 per payout, for `bench/run.sh settle`. The file is
// deterministic for a given -run tag, so a second import is all duplicates.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	n := flag.Int("lines", 1_000_000, "charge lines to write")
	run := flag.String("run", "bench", "tag making the ids unique per run")
	perPayout := flag.Int("per-payout", 1000, "lines per payout")
	fees := flag.Bool("fees", false, "write fee rows (no charge: every line joins its payout's stream) instead of charges")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	fmt.Fprintln(w, "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,customer_facing_amount,customer_facing_currency,charge_id,payment_intent_id")
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range *n {
		gross := int64(500 + i%100_000)
		fee := 30 + gross*29/1000
		ts := at.Add(time.Duration(i) * time.Second).Format(time.DateTime)
		major := func(v int64) string { return fmt.Sprintf("%d.%02d", v/100, v%100) }
		if *fees {
			fmt.Fprintf(w, "po_%s_%d,txn_%s_%d,%s,%s,usd,-0.05,0.00,-0.05,fee,,-0.05,usd,,\n",
				*run, i / *perPayout, *run, i, ts, ts)
			continue
		}
		fmt.Fprintf(w, "po_%s_%d,txn_%s_%d,%s,%s,usd,%s,%s,%s,charge,ch_%s_%d,%s,usd,ch_%s_%d,pi_%s_%d\n",
			*run, i / *perPayout, *run, i, ts, ts, major(gross), major(fee), major(gross-fee), *run, i, major(gross), *run, i, *run, i)
	}
}
