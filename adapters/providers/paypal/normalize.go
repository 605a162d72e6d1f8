package paypal

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

type envelope struct {
	ID         string          `json:"id"`
	CreateTime string          `json:"create_time"`
	EventType  string          `json:"event_type"`
	Resource   json.RawMessage `json:"resource"`
}

type amountT struct {
	Value        string `json:"value"`
	CurrencyCode string `json:"currency_code"`
}

type link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
}

// capture or refund resource (v2 payments).
type paymentResource struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Amount    *amountT `json:"amount"`
	Links     []link   `json:"links"`
	Breakdown *struct {
		PaypalFee *amountT `json:"paypal_fee"`
	} `json:"seller_receivable_breakdown"`
	StatusDetails *struct {
		Reason string `json:"reason"`
	} `json:"status_details"`
	// The order the capture belongs to, and the merchant's invoice id: the
	// merchant's references, found by the console's search. Raw, read at
	// best (references.go): a shape no fact depends on never refuses a
	// delivery.
	Supplementary json.RawMessage `json:"supplementary_data"`
	InvoiceID     json.RawMessage `json:"invoice_id"`
}

type disputeResource struct {
	DisputeID            string   `json:"dispute_id"`
	Reason               string   `json:"reason"`
	DisputeAmount        *amountT `json:"dispute_amount"`
	DisputedTransactions []struct {
		SellerTransactionID string `json:"seller_transaction_id"`
	} `json:"disputed_transactions"`
	DisputeOutcome *struct {
		OutcomeCode string `json:"outcome_code"`
	} `json:"dispute_outcome"`
}

// normalize maps one verified PayPal event.
func normalize(raw []byte) (delivery.Event, error) {
	var env envelope
	if err := payload.DecodeBody(raw, &env); err != nil {
		return delivery.Event{}, err
	}
	if env.ID == "" {
		return delivery.Event{}, fmt.Errorf("%w: id", delivery.ErrMissingField)
	}
	if env.EventType == "" {
		return delivery.Event{}, fmt.Errorf("%w: event_type", delivery.ErrMissingField)
	}
	at, err := payload.RFC3339("create_time", env.CreateTime)
	if err != nil {
		return delivery.Event{}, err
	}
	ev := delivery.Event{
		Provider:    Name,
		DedupKey:    env.ID,
		Type:        env.EventType,
		OccurredAt:  at,
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	switch env.EventType {
	case "PAYMENT.CAPTURE.COMPLETED", "PAYMENT.CAPTURE.DENIED", "PAYMENT.CAPTURE.REFUNDED", "PAYMENT.CAPTURE.REVERSED":
		var res paymentResource
		if err := payload.DecodeMember(env.Resource, &res, "resource"); err != nil {
			return delivery.Event{}, err
		}
		if res.ID == "" {
			return delivery.Event{}, fmt.Errorf("%w: resource.id", delivery.ErrMissingField)
		}
		err = paymentEvent(&ev, env.EventType, res)
	case "CUSTOMER.DISPUTE.CREATED", "CUSTOMER.DISPUTE.RESOLVED":
		var res disputeResource
		if err := payload.DecodeMember(env.Resource, &res, "resource"); err != nil {
			return delivery.Event{}, err
		}
		err = disputeEvent(&ev, env.EventType, res)
	default:
		// not handled: ignored, raw kept in the inbox
	}
	if err != nil {
		return delivery.Event{}, err
	}
	return ev, nil
}

func paymentEvent(ev *delivery.Event, typ string, res paymentResource) error {
	addReferences(ev, res) // references.go
	switch typ {
	case "PAYMENT.CAPTURE.COMPLETED":
		ev.PaymentKey = res.ID
		amt, cur, err := parseAmount(res.Amount, "resource.amount")
		if err != nil {
			return err
		}
		var fee int64
		if res.Breakdown != nil && res.Breakdown.PaypalFee != nil {
			f, fcur, err := parseAmount(res.Breakdown.PaypalFee, "resource.seller_receivable_breakdown.paypal_fee")
			if err != nil {
				return err
			}
			if fcur != cur {
				return fmt.Errorf("%w: resource.seller_receivable_breakdown.paypal_fee is in %s, the capture in %s",
					delivery.ErrInvalidAmount, fcur, cur)
			}
			fee = f
		}
		ev.Facts = []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: res.ID, Amount: amt, Fee: fee, Currency: cur}}
	case "PAYMENT.CAPTURE.DENIED":
		ev.PaymentKey = res.ID
		f := delivery.Fact{Kind: delivery.KindFailed}
		// The denied capture's amount (a capture resource always carries
		// one), kept with the failure when it reads; it posts nothing.
		if amt, cur, err := parseAmount(res.Amount, "resource.amount"); err == nil {
			f.Amount, f.Currency = amt, cur
		}
		if res.StatusDetails != nil {
			f.Reason = res.StatusDetails.Reason
		}
		ev.Facts = []delivery.Fact{f}
	case "PAYMENT.CAPTURE.REFUNDED":
		capID := upCaptureID(res.Links)
		if capID == "" {
			return fmt.Errorf("%w: resource.links: no \"up\" link to the refunded capture", delivery.ErrMissingField)
		}
		ev.PaymentKey = capID
		var kind delivery.Kind
		switch strings.ToUpper(res.Status) {
		case "", "COMPLETED":
			kind = delivery.KindRefunded
		case "FAILED", "CANCELLED":
			kind = delivery.KindRefundFailed
		default: // PENDING: not money yet
			return nil
		}
		amt, cur, err := parseAmount(res.Amount, "resource.amount")
		if err != nil {
			return err
		}
		ev.Facts = []delivery.Fact{{Kind: kind, BusinessID: res.ID, Amount: amt, Currency: cur}}
	case "PAYMENT.CAPTURE.REVERSED":
		// No facts (see the package doc); the key is only best effort.
		ev.PaymentKey = upCaptureID(res.Links)
		if ev.PaymentKey == "" {
			ev.PaymentKey = res.ID
		}
	}
	return nil
}

func disputeEvent(ev *delivery.Event, typ string, res disputeResource) error {
	if res.DisputeID == "" {
		return fmt.Errorf("%w: resource.dispute_id", delivery.ErrMissingField)
	}
	if len(res.DisputedTransactions) == 0 || res.DisputedTransactions[0].SellerTransactionID == "" {
		return fmt.Errorf("%w: resource.disputed_transactions[0].seller_transaction_id", delivery.ErrMissingField)
	}
	ev.PaymentKey = res.DisputedTransactions[0].SellerTransactionID
	var kind delivery.Kind
	if typ == "CUSTOMER.DISPUTE.CREATED" {
		// PayPal holds the disputed amount from the seller's balance when
		// a dispute opens (an inquiry through PayPal as much as a card
		// chargeback): the funds leave the available balance, so the
		// opening posts to the dispute receivable. A resolution in the
		// seller's favour releases the hold (won); one in the buyer's
		// favour keeps it (lost).
		kind = delivery.KindDisputeOpened
	} else {
		if res.DisputeOutcome == nil || res.DisputeOutcome.OutcomeCode == "" {
			return fmt.Errorf("%w: resource.dispute_outcome.outcome_code", delivery.ErrMissingField)
		}
		switch res.DisputeOutcome.OutcomeCode {
		case "RESOLVED_BUYER_FAVOUR", "ACCEPTED":
			kind = delivery.KindDisputeLost
		case "RESOLVED_SELLER_FAVOUR", "CANCELED_BY_BUYER", "DENIED", "RESOLVED_WITH_PAYOUT":
			kind = delivery.KindDisputeWon
		default:
			return nil // an outcome we cannot read as won or lost: recorded, posts nothing
		}
	}
	amt, cur, err := parseAmount(res.DisputeAmount, "resource.dispute_amount")
	if err != nil {
		return err
	}
	ev.Facts = []delivery.Fact{{Kind: kind, BusinessID: DisputeID(ev.PaymentKey), LegacyID: res.DisputeID,
		Amount: amt, Currency: cur, Reason: res.Reason}}
	return nil
}

// DisputeID is the business id of the dispute of capture captureID, the
// same on both of PayPal's channels, so that a chargeback reported by a
// REST CUSTOMER.DISPUTE.* webhook and by an IPN Reversed message is one
// fact. The channels share no dispute id: the REST dispute names its
// capture in disputed_transactions[].seller_transaction_id
// [developer.paypal.com/api/customer-disputes/v1, "Show dispute details"],
// an IPN reversal only in parent_txn_id, "the txn_id of the original
// transaction" [PayPal IPN guide, Transaction and Notification-Related
// Variables], and IPN's txn_id for a payment is the REST capture id. The id
// is the one paypalipn gave its reversals from the start ("reversal-" +
// parent_txn_id), so stored IPN disputes keep theirs; a REST dispute stored
// under its PP-D-… id before this derivation is found by that id
// (delivery.Fact.LegacyID). PayPal holds one dispute per transaction at a
// time; two disputes of one capture are taken as one (a different amount
// is flagged amount_mismatch).
func DisputeID(captureID string) string { return "reversal-" + captureID }

// parseAmount converts a PayPal money object (decimal major units) exactly.
func parseAmount(a *amountT, field string) (int64, money.Currency, error) {
	if a == nil {
		return 0, "", fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
	}
	return payload.Decimal{ValueKey: "value", Value: a.Value, CurrencyKey: "currency_code", Currency: a.CurrencyCode}.Parse(field)
}

// upCaptureID returns the capture id named by the rel "up" link
// (".../v2/payments/captures/{id}"), or "".
func upCaptureID(links []link) string {
	for _, l := range links {
		if !strings.EqualFold(l.Rel, "up") {
			continue
		}
		u, err := url.Parse(l.Href)
		if err != nil {
			continue
		}
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		for i := 0; i+1 < len(parts); i++ {
			if parts[i] == "captures" && parts[i+1] != "" {
				return parts[i+1]
			}
		}
	}
	return ""
}
