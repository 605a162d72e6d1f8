package wechatpay

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
)

// QueryState is what a transaction query's trade_state says for the
// expectation asker (WeChat Pay's 查询订单 reference, trade_state).
type QueryState string

const (
	QueryPaid    QueryState = "paid"    // SUCCESS, REFUND (paid, refunded since): a capture
	QueryPending QueryState = "pending" // NOTPAY, USERPAYING, ACCEPT: ask again
	QueryClosed  QueryState = "closed"  // CLOSED, REVOKED, PAYERROR: no capture, stop asking
)

// QueryDedupPrefix starts the dedup key (the envelope id) of a capture
// learned by asking: one per transaction, so that asking again is a
// duplicate at the gate; the notification of the same payment (another
// id) finds the capture already in the payment's stream and records
// nothing.
const QueryDedupPrefix = "query-"

// QueryAnswer is a verified transaction query answer as the ledger reads
// it.
type QueryAnswer struct {
	State QueryState
	Event delivery.Event // the TRANSACTION.SUCCESS notification's fact, when paid
}

// Query reads the plaintext JSON of a verified transaction query (GET
// /v3/pay/transactions/out-trade-no/{out_trade_no}, or its partner
// variant): the same object a TRANSACTION.SUCCESS notification carries
// encrypted. A paid transaction becomes that notification: the answer,
// encrypted under the first APIv3 key as WeChat Pay encrypts a resource,
// in the notification's envelope, then opened and normalized by the
// notification's own code, so that it carries exactly the notification's
// facts; the envelope is the inbox's raw body, which a redrive opens like a
// notification's. A REFUND answer (paid, refunded since) records its
// capture only: the refunds come with their own notifications or the bill.
func (a *Adapter) Query(answer []byte) (QueryAnswer, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(answer, &obj); err != nil {
		return QueryAnswer{}, fmt.Errorf("%w: transaction query answer: %v", delivery.ErrMalformed, err)
	}
	var state, txn, success string
	_ = json.Unmarshal(obj["trade_state"], &state)
	_ = json.Unmarshal(obj["transaction_id"], &txn)
	_ = json.Unmarshal(obj["success_time"], &success)
	switch state {
	case "SUCCESS":
	case "REFUND":
		obj["trade_state"] = json.RawMessage(`"SUCCESS"`)
	case "NOTPAY", "USERPAYING", "ACCEPT":
		return QueryAnswer{State: QueryPending}, nil
	case "CLOSED", "REVOKED", "PAYERROR":
		return QueryAnswer{State: QueryClosed}, nil
	default:
		return QueryAnswer{}, fmt.Errorf("%w: transaction query answer: trade_state %q", delivery.ErrMalformed, state)
	}
	if txn == "" {
		return QueryAnswer{}, fmt.Errorf("%w: transaction query answer: transaction_id", delivery.ErrMissingField)
	}
	plaintext, err := json.Marshal(obj)
	if err != nil {
		return QueryAnswer{}, err
	}
	res, err := a.decryptor.seal(plaintext, "transaction")
	if err != nil {
		return QueryAnswer{}, err
	}
	env, err := json.Marshal(map[string]any{"id": QueryDedupPrefix + txn, "create_time": success,
		"resource_type": "encrypt-resource", "event_type": EventTransactionSuccess, "summary": "支付成功", "resource": res})
	if err != nil {
		return QueryAnswer{}, err
	}
	n, err := a.open(env)
	if err != nil {
		return QueryAnswer{}, err
	}
	ev, err := n.Normalize(env)
	if err != nil {
		return QueryAnswer{}, err
	}
	return QueryAnswer{State: QueryPaid, Event: ev}, nil
}

// seal encrypts plaintext as WeChat Pay encrypts a notification's
// resource (AEAD_AES_256_GCM, a 12-character nonce, associated data),
// under the first APIv3 key, the one open tries first.
func (d *decryptor) seal(plaintext []byte, associated string) (Resource, error) {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, nonceSize)
	if _, err := rand.Read(b); err != nil {
		return Resource{}, err
	}
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	ct := d.aeads[0].Seal(nil, b, plaintext, []byte(associated))
	return Resource{OriginalType: "transaction", Algorithm: Algorithm, Ciphertext: base64.StdEncoding.EncodeToString(ct),
		AssociatedData: associated, Nonce: string(b)}, nil
}
