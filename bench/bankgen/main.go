// Command bankgen writes a camt.053 bank statement of N booked credits for
// the bank import bench (bench/run.sh bank): one statement, sequence
// number -seq, balances that add up, each entry with its own AcctSvcrRef
// (-run keeps the references of two runs apart) and a remittance text. It
// streams: memory does not grow with N.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
)

func main() {
	n := flag.Int("entries", 1000, "booked entries")
	run := flag.String("run", "r", "prefix of the entries' references")
	seq := flag.Int("seq", 1, "the statement's ElctrncSeqNb")
	flag.Parse()
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	// amount of entry i: 10.00 + i cents, so the sum is exact and known.
	var total int64
	for i := 0; i < *n; i++ {
		total += 1000 + int64(i%100000)
	}
	cents := func(v int64) string { return fmt.Sprintf("%d.%02d", v/100, v%100) }
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt>
<GrpHdr><MsgId>%s</MsgId><CreDtTm>2026-03-03T18:00:00</CreDtTm></GrpHdr>
<Stmt><Id>%s-S%d</Id><ElctrncSeqNb>%d</ElctrncSeqNb><Acct><Id><IBAN>DE89370400440532013000</IBAN></Id><Ccy>EUR</Ccy></Acct>
<Bal><Tp><CdOrPrtry><Cd>OPBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">0.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-03-02</Dt></Dt></Bal>
<Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp><Amt Ccy="EUR">%s</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-03-03</Dt></Dt></Bal>
<TxsSummry><TtlNtries><NbOfNtries>%d</NbOfNtries></TtlNtries></TxsSummry>
`, *run, *run, *seq, *seq, cents(total), *n)
	for i := 0; i < *n; i++ {
		fmt.Fprintf(w, `<Ntry><Amt Ccy="EUR">%s</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts><BookgDt><Dt>2026-03-03</Dt></BookgDt><AcctSvcrRef>%s-%d</AcctSvcrRef><BkTxCd><Domn><Cd>PMNT</Cd><Fmly><Cd>RCDT</Cd><SubFmlyCd>ESCT</SubFmlyCd></Fmly></Domn></BkTxCd><NtryDtls><TxDtls><RmtInf><Ustrd>TRANSFER %s %d</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>
`, cents(1000+int64(i%100000)), *run, i, *run, i)
	}
	fmt.Fprint(w, "</Stmt></BkToCstmrStmt></Document>\n")
}
