package delivery

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
)

// FactsHash is the hex SHA-256 of what the delivery says happened: its type,
// payment key, sub-merchant and facts (kind, business id, amount, fee,
// discount, currency), in a
// canonical encoding. Two deliveries under one dedup key with the same facts
// hash are the same delivery even when their bytes differ: providers
// re-render envelopes, timestamps and field order on a retry. Only different
// facts make a conflicting redelivery.
//
// Left out on purpose: the bytes and their hash, the occurrence time (a
// re-rendered timestamp is not a new fact), a paid payout's arrival date (a
// day, not money; payouts stored before it existed redeliver as
// duplicates), a fact's free-text reason (of a
// failure, cancellation, dispute or payout failure: the provider's wording,
// which moves no money), the merchant's References (ids for the search),
// and the provider and dedup key (equal by
// construction when it is compared; so the hash of a row migration 00010
// moved to provider paypal and an ipn: key still holds).
// A fact with a LegacyID (Fact.LegacyID) is hashed with it in place of its
// BusinessID: the id it was stored under before its derivation changed.
// The facts are compared as a set, so a provider listing them in another
// order says the same thing.
func (e Event) FactsHash() string {
	facts := make([][]byte, 0, len(e.Facts))
	for _, f := range e.Facts {
		var b []byte
		b = field(b, string(f.Kind))
		id := f.BusinessID
		if f.LegacyID != "" {
			// The id the fact was stored under before its derivation
			// changed (Fact.LegacyID): stored hashes still hold.
			id = f.LegacyID
		}
		b = field(b, id)
		b = field(b, strconv.FormatInt(f.Amount, 10))
		b = field(b, strconv.FormatInt(f.Fee, 10))
		b = field(b, string(f.Currency))
		if f.Discount != 0 {
			// Only when set, so that the hashes stored before discounts
			// existed still hold.
			b = field(b, "discount")
			b = field(b, strconv.FormatInt(f.Discount, 10))
		}
		if f.Settlement != nil {
			// A report line's facts are its amounts (settlement.Line.FactsHash).
			b = field(b, f.Settlement.FactsHash())
		}
		if f.Bank != nil {
			b = bankFacts(b, f.Bank) // bank.go
		}
		for _, c := range f.Counted {
			b = field(b, c.Key)
			b = field(b, strconv.FormatInt(c.Net, 10))
		}
		facts = append(facts, b)
	}
	slices.SortFunc(facts, func(a, b []byte) int { return slices.Compare(a, b) })
	h := sha256.New()
	var head []byte
	head = field(head, "onceledger facts v1")
	head = field(head, e.Type)
	head = field(head, e.PaymentKey)
	head = field(head, strconv.Itoa(len(facts)))
	if e.SubMerchant != "" {
		// As the discount: only when set, stored hashes unchanged.
		head = field(head, "sub_merchant")
		head = field(head, e.SubMerchant)
	}
	h.Write(head)
	for _, f := range facts {
		h.Write(f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// FactsHashBeforeFailureAmounts is FactsHash as it was before a failure's
// fact carried its attempted amount: the amount and currency of every
// KindFailed fact left at zero. Adyen, PayPal (REST and IPN), Square and
// Circle failures carry them since; a failure of theirs recorded before
// holds this hash, and its redelivery, with the same facts, is a plain
// duplicate (ingest.Redelivery compares both), not a conflict.
func (e Event) FactsHashBeforeFailureAmounts() string {
	facts := make([]Fact, len(e.Facts))
	for i, f := range e.Facts {
		if f.Kind == KindFailed {
			f.Amount, f.Currency = 0, ""
		}
		facts[i] = f
	}
	e.Facts = facts
	return e.FactsHash()
}

// FactsHashBeforeCoupons is FactsHash as it was before refunds carried the
// coupon money they return and WeChat Pay captures their no-cash coupons
// (issue 34): every fact's discount left at zero. A delivery recorded
// before, redelivered with the coupon now read, is a plain duplicate
// (ingest.Redelivery compares it too), not a conflict; the first record
// stands.
func (e Event) FactsHashBeforeCoupons() string {
	facts := make([]Fact, len(e.Facts))
	for i, f := range e.Facts {
		f.Discount = 0
		facts[i] = f
	}
	e.Facts = facts
	return e.FactsHash()
}

// field appends s length-prefixed, so that no two sequences of fields
// encode alike.
func field(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
