// Command settlegen writes a settlement report of N lines for `bench/run.sh
// settle` and the upload-memory tests, in one of the formats `onceledger
// settle import` reads (-format):
//
//   - stripe (default): Stripe's itemized payout reconciliation report (CSV)
//     of charge lines, or with -fees of fee rows (payout-only lines, all on
//     their payout's stream);
//   - stripe-json: a Stripe Balance Transactions list, sources expanded;
//   - adyen: an Adyen Settlement details report (CSV), one batch per payout;
//   - paypal: a PayPal Settlement report (STL), one section, its footers;
//   - square: a Square ListPayoutEntries response (JSON);
//   - alipay-account: an Alipay account bill (账务明细, UTF-8 with a byte
//     order mark, as a bill re-saved by a spreadsheet) of withdrawals
//     (提现) from a balance starting at 0, one a second: each line records
//     a payout and states the running balance 账户余额 (an assertion per
//     line that agrees with the ledger: the balance goes negative, which
//     the importer takes as it is). Every line records a fact, so that
//     the balances' cost is measured against the lines' own (bench/run.sh
//     days).
//
// Lines are grouped -per-payout to a payout (1,000 by default); with
// -big-payout K the first K lines form one payout of their own and the rest
// are grouped as before (the bench's 1,000,000-line report in which one
// payout holds 100,000 lines). PayPal's daily report has no payouts. The
// file is deterministic for a given -run tag, so a second import is all
// duplicates.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"time"
)

type gen struct {
	w         *bufio.Writer
	n         int
	run       string
	perPayout int
	big       int
	fees      bool
}

func main() {
	g := gen{}
	format := flag.String("format", "stripe", "stripe, stripe-json, adyen, paypal, square or alipay-account")
	flag.IntVar(&g.n, "lines", 1_000_000, "lines to write")
	flag.StringVar(&g.run, "run", "bench", "tag making the ids unique per run")
	flag.IntVar(&g.perPayout, "per-payout", 1000, "lines per payout")
	flag.IntVar(&g.big, "big-payout", 0, "the first this many lines form one payout (0: none)")
	flag.BoolVar(&g.fees, "fees", false, "stripe: write fee rows (no charge: every line joins its payout's stream) instead of charges")
	flag.Parse()
	if g.perPayout <= 0 || g.big < 0 || g.n < 0 {
		fmt.Fprintln(os.Stderr, "settlegen: -per-payout must be positive, -big-payout and -lines not negative")
		os.Exit(2)
	}
	g.w = bufio.NewWriterSize(os.Stdout, 1<<20)
	write := map[string]func(){
		"stripe": g.stripeCSV, "stripe-json": g.stripeJSON, "adyen": g.adyen, "paypal": g.paypal, "square": g.square,
		"alipay-account": g.alipayAccount,
	}[*format]
	if write == nil {
		fmt.Fprintf(os.Stderr, "settlegen: unknown -format %q\n", *format)
		os.Exit(2)
	}
	write()
	if err := g.w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "settlegen:", err)
		os.Exit(1)
	}
}

// payout is the index of line i's payout: the big payout is 0, the others
// follow it.
func (g *gen) payout(i int) int {
	if i < g.big {
		return 0
	}
	if g.big > 0 {
		return 1 + (i-g.big)/g.perPayout
	}
	return i / g.perPayout
}

// amounts of line i in minor units: gross, fee, net.
func amounts(i int) (int64, int64, int64) {
	gross := int64(500 + i%100_000)
	fee := 30 + gross*29/1000
	return gross, fee, gross - fee
}

var start = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func at(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }

func major(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%02d", sign, v/100, v%100)
}

func (g *gen) stripeCSV() {
	w := g.w
	fmt.Fprintln(w, "automatic_payout_id,balance_transaction_id,created_utc,available_on_utc,currency,gross,fee,net,reporting_category,source_id,customer_facing_amount,customer_facing_currency,charge_id,payment_intent_id")
	for i := range g.n {
		ts := at(i).Format(time.DateTime)
		if g.fees {
			fmt.Fprintf(w, "po_%s_%d,txn_%s_%d,%s,%s,usd,-0.05,0.00,-0.05,fee,,-0.05,usd,,\n",
				g.run, g.payout(i), g.run, i, ts, ts)
			continue
		}
		gross, fee, net := amounts(i)
		fmt.Fprintf(w, "po_%s_%d,txn_%s_%d,%s,%s,usd,%s,%s,%s,charge,ch_%s_%d,%s,usd,ch_%s_%d,pi_%s_%d\n",
			g.run, g.payout(i), g.run, i, ts, ts, major(gross), major(fee), major(net), g.run, i, major(gross), g.run, i, g.run, i)
	}
}

// stripeJSON writes a Balance Transactions list: the API names no payout
// in the objects (a list fetched with ?payout=po_… does not repeat it), so
// the lines carry none unless the import is given one.
func (g *gen) stripeJSON() {
	w := g.w
	fmt.Fprint(w, "{\n  \"object\": \"list\",\n  \"url\": \"/v1/balance_transactions\",\n  \"has_more\": false,\n  \"data\": [")
	for i := range g.n {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		gross, fee, net := amounts(i)
		fmt.Fprintf(w, `
    {"id": "txn_%[1]s_%[2]d", "object": "balance_transaction", "amount": %[3]d, "available_on": %[6]d, "created": %[6]d,
     "currency": "usd", "description": "Order #%[2]d", "exchange_rate": null, "fee": %[4]d, "net": %[5]d,
     "reporting_category": "charge", "status": "available", "type": "charge",
     "source": {"id": "ch_%[1]s_%[2]d", "object": "charge", "amount": %[3]d, "amount_captured": %[3]d, "currency": "usd",
      "payment_intent": "pi_%[1]s_%[2]d", "balance_transaction": "txn_%[1]s_%[2]d"}}`,
			g.run, i, gross, fee, net, at(i).Unix())
	}
	fmt.Fprint(w, "\n  ]\n}\n")
}

func (g *gen) adyen() {
	w := g.w
	fmt.Fprintln(w, "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number,Reserved4,Reserved5,Booking Date,Booking Date TimeZone,Metadata")
	for i := range g.n {
		gross, fee, net := amounts(i)
		ts := at(i).Format(time.DateTime)
		fmt.Fprintf(w, "OnceLedger,OnceLedgerECOM,P%s%d,order-%s-%d,visa,%s,CET,Settled,M%s%d,EUR,,%s,1,EUR,,%s,%s,,,,visaclassic,capture-%d,%d,,,%s,CET,\n",
			g.run, i, g.run, i, ts, g.run, i, major(gross), major(net), major(fee), i, 1+g.payout(i), ts)
	}
}

// paypal writes one section of T0006 payments received and the footers
// the importer checks against its rows: SF and RF (gross credits, gross
// debits, fee credits, fee debits), SC, RC and FF (SB rows).
func (g *gen) paypal() {
	w := g.w
	fmt.Fprint(w, "\"RH\",2026/12/01 02:44:19 -0800,\"A\",\"RD465XN5VS364\",009\n\"FH\",01\n")
	fmt.Fprint(w, "\"SH\",2026/11/01 00:00:00 -0800,2026/12/31 23:59:59 -0800,\"RD465XN5VS364\",\"\"\n")
	fmt.Fprint(w, "\"CH\",\"Transaction ID\",\"Invoice ID\",\"PayPal Reference ID\",\"PayPal Reference ID Type\",\"Transaction Event Code\",\"Transaction Initiation Date\",\"Transaction Completion Date\",\"Transaction  Debit or Credit\",\"Gross Transaction Amount\",\"Gross Transaction Currency\",\"Fee Debit or Credit\",\"Fee Amount\",\"Fee Currency\",\"Custom Field\",\"Consumer ID\",\"Payment Tracking ID\",\"Store ID\",\"Bank Reference ID\",\"Credit Transactional Fee\",\"Credit Promotional Fee\",\"Credit Term\"\n")
	var sumGross, sumFee int64
	for i := range g.n {
		gross, fee, _ := amounts(i)
		sumGross += gross
		sumFee += fee
		ts := at(i).Add(-8 * time.Hour).Format("2006/01/02 15:04:05 -0800")
		fmt.Fprintf(w, "\"SB\",\"%sX%d\",\"order-%d\",\"\",\"\",\"T0006\",%s,%s,\"CR\",%d,\"USD\",\"DR\",%d,\"USD\",\"cust-%d\",\"8XMBQVFBPW2ZY\",\"\",\"\",\"\",\"\",\"\",\"\"\n",
			g.run, i, i, ts, ts, gross, fee, i)
	}
	foot := fmt.Sprintf("\"USD\",%d,0,0,%d,\"CR\",0,\"CR\",0,\"CR\",0,\"CR\",0,\"CR\",0,\"CR\",0,%d", sumGross, sumFee, g.n)
	fmt.Fprintf(w, "\"SF\",%s\n\"SC\",%d\n\"RF\",%s\n\"RC\",%d\n\"FF\",%d\n", foot, g.n, foot, g.n, g.n)
}

func (g *gen) square() {
	w := g.w
	fmt.Fprint(w, "{\n  \"payout_entries\": [")
	for i := range g.n {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		gross, fee, net := amounts(i)
		fmt.Fprintf(w, `
    {"id": "poe_%[1]s_%[2]d", "payout_id": "po_%[1]s_%[7]d", "effective_at": "%[6]s", "type": "CHARGE",
     "gross_amount_money": {"amount": %[3]d, "currency": "USD"}, "fee_amount_money": {"amount": %[4]d, "currency": "USD"},
     "net_amount_money": {"amount": %[5]d, "currency": "USD"}, "type_charge_details": {"payment_id": "pay_%[1]s_%[2]d"}}`,
			g.run, i, gross, fee, net, at(i).Format(time.RFC3339), g.payout(i))
	}
	fmt.Fprint(w, "\n  ]\n}\n")
}

// alipayAccount writes an Alipay account bill (the layout of
// adapters/providers/alipay/testdata/bill/account.csv): withdrawals of
// amounts(i)'s net each, the running balance after each, the trailer's
// totals.
func (g *gen) alipayAccount() {
	w := g.w
	cst := time.FixedZone("CST", 8*3600)
	first, last := at(0).In(cst), at(g.n).In(cst)
	fmt.Fprint(w, "\uFEFF#支付宝账务明细查询\n#账号：[20885318916687390156]\n")
	fmt.Fprintf(w, "#起始日期：[%s]   终止日期：[%s]\n", first.Format("2006年01月02日 15:04:05"), last.Format("2006年01月02日 15:04:05"))
	fmt.Fprintln(w, "#-----------------------------------------账务明细列表----------------------------------------")
	fmt.Fprintln(w, "账务流水号,业务流水号,商户订单号,商品名称,发生时间,对方账号,收入金额（+元）,支出金额（-元）,账户余额（元）,交易渠道,业务类型,备注")
	var bal, total int64
	for i := range g.n {
		_, _, out := amounts(i)
		bal -= out
		total += out
		fmt.Fprintf(w, "%s%012d\t,%s%d\t,\t,提现\t,%s\t,招商银行(1234)\t,\t,%s\t,%s\t,支付宝\t,提现\t,\n",
			"2026", i, g.run, i, at(i).In(cst).Format(time.DateTime), major(-out), major(bal))
	}
	fmt.Fprintln(w, "#-----------------------------------------账务明细列表结束------------------------------------")
	fmt.Fprintf(w, "#支出合计：%d笔，共%s元\n#收入合计：0笔，共0.00元\n", g.n, major(-total))
	fmt.Fprintf(w, "#导出时间：[%s]\n", last.Format("2006年01月02日 15:04:05"))
}
