package paypal

import (
	"encoding/json"

	"github.com/onceledger/onceledger/domain/delivery"
)

// addReferences gives ev the merchant's references a capture resource
// names, when they read: supplementary_data.related_ids.order_id (the
// order of an Orders v2 checkout) and invoice_id.
func addReferences(ev *delivery.Event, res paymentResource) {
	var sup struct {
		RelatedIDs struct {
			OrderID string `json:"order_id"`
		} `json:"related_ids"`
	}
	if len(res.Supplementary) > 0 && json.Unmarshal(res.Supplementary, &sup) == nil {
		ev.AddReferences(sup.RelatedIDs.OrderID)
	}
	var invoice string
	if len(res.InvoiceID) > 0 && json.Unmarshal(res.InvoiceID, &invoice) == nil {
		ev.AddReferences(invoice)
	}
}
