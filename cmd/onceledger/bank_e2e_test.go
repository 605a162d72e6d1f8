package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 37, through the contract only: a Stripe payout (signed webhook,
// with its arrival date) proven into the bank by an uploaded camt.053
// statement: GET /v1/payouts?banked=true shows it with its bank line, the
// same upload again changes nothing; on both event stores.
func TestPayoutProvenIntoTheBank(t *testing.T) {
	for _, kind := range []eventStoreKind{onPostgres, onESDB} {
		t.Run(string(kind), func(t *testing.T) {
			s := propStack(t, kind)
			run := uniq("bank")
			account := strings.ToLower(strings.ReplaceAll(run, "_", "-"))
			created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			arrival := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
			po := "po_" + run
			hook := fmt.Appendf(nil, `{"id":"evt_%s","object":"event","type":"payout.paid","created":%d,"data":{"object":{"id":%q,"object":"payout","amount":1000,"arrival_date":%d,"created":%d,"automatic":true,"currency":"usd","status":"paid"}}}`,
				run, created.Unix(), po, arrival.Unix(), created.Unix())
			require.Equal(t, "accepted", s.sendStripe(hook).outcome(t))
			s.projectedToHead()

			stmt := fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt><GrpHdr><MsgId>M</MsgId><CreDtTm>2026-12-04T18:00:00</CreDtTm></GrpHdr>
<Stmt><Id>S-%s</Id><ElctrncSeqNb>1</ElctrncSeqNb><Acct><Id><IBAN>US00TEST</IBAN></Id><Ccy>USD</Ccy></Acct>
<Bal><Tp><CdOrPrtry><Cd>OPBD</Cd></CdOrPrtry></Tp><Amt Ccy="USD">0.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-12-04</Dt></Dt></Bal>
<Bal><Tp><CdOrPrtry><Cd>CLBD</Cd></CdOrPrtry></Tp><Amt Ccy="USD">10.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt><Dt>2026-12-04</Dt></Dt></Bal>
<Ntry><Amt Ccy="USD">10.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts><BookgDt><Dt>2026-12-04</Dt></BookgDt><AcctSvcrRef>REF-%s</AcctSvcrRef>
<NtryDtls><TxDtls><RmtInf><Ustrd>STRIPE %s</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry></Stmt></BkToCstmrStmt></Document>`, run, run, po)
			ans := s.v1(http.MethodPost, "/v1/bank-statements?account="+account, stmt)
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			assert.JSONEq(t, `{"format":"camt.053","lines":1,"new":1,"duplicates":0,"conflicts":0,"pending":0,"statements":1,"payouts":1}`, ans.Body)
			ans = s.v1(http.MethodPost, "/v1/bank-statements?account="+account, stmt)
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			assert.JSONEq(t, `{"format":"camt.053","lines":1,"new":0,"duplicates":1,"conflicts":0,"pending":0,"statements":1,"payouts":0}`, ans.Body)

			bad := []byte(strings.Replace(string(stmt), `<Amt Ccy="USD">10.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt>`, `<Amt Ccy="USD">11.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Dt>`, 1))
			ans = s.v1(http.MethodPost, "/v1/bank-statements?account="+account, bad)
			assert.Equal(t, http.StatusBadRequest, ans.Status, ans.Body)
			assert.Contains(t, ans.Body, "Stmt[1]")

			s.projectedToHead()
			var out struct {
				Payouts []struct {
					PayoutID string `json:"payout_id"`
					Banked   bool   `json:"banked"`
					BankedAt string `json:"banked_at"`
					BankLine struct {
						Account   string `json:"account"`
						Reference string `json:"reference"`
						BookedOn  string `json:"booked_on"`
						Amount    int64  `json:"amount"`
					} `json:"bank_line"`
				} `json:"payouts"`
			}
			ans = s.v1(http.MethodGet, "/v1/payouts?provider=stripe&banked=true", nil)
			require.Equal(t, http.StatusOK, ans.Status, ans.Body)
			require.NoError(t, json.Unmarshal([]byte(ans.Body), &out))
			found := false
			for _, p := range out.Payouts {
				if p.PayoutID == po {
					found = true
					assert.True(t, p.Banked)
					assert.Equal(t, "2026-12-04", p.BankedAt)
					assert.Equal(t, account, p.BankLine.Account)
					assert.Equal(t, "REF-"+run, p.BankLine.Reference)
					assert.Equal(t, int64(1000), p.BankLine.Amount)
				}
			}
			assert.True(t, found, "the payout is banked: %s", ans.Body)
			ans = s.v1(http.MethodGet, "/v1/balances?account=bank:"+account, nil)
			assert.Contains(t, ans.Body, `"balance":1000`)
		})
	}
}
