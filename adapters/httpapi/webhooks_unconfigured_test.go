package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/providers/registry"
)

// The 404 of a provider the build has but the server does not configure
// names the variables that configure it; an unknown name gets the plain
// 404.
func TestWebhookUnconfiguredProviderNamesItsVariables(t *testing.T) {
	h := httpapi.NewHandler(httpapi.Config{Ingester: &guard{}, Unconfigured: registry.Unconfigured, ProviderConcurrency: -1, Logger: slog.New(slog.DiscardHandler)})
	post := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}")))
		return w
	}
	w := post("/webhooks/adyen")
	assert.Equal(t, http.StatusNotFound, w.Code)
	assert.Contains(t, w.Body.String(), `provider \"adyen\" is not configured on this server: set ONCELEDGER_ADYEN_HMAC_KEYS`)
	w = post("/webhooks/paypal")
	assert.Contains(t, w.Body.String(), "set ONCELEDGER_PAYPAL_WEBHOOK_ID and ONCELEDGER_PAYPAL_CERT_FILES")
	w = post("/webhooks/nope")
	assert.Equal(t, http.StatusNotFound, w.Code)
	assert.NotContains(t, w.Body.String(), "ONCELEDGER_")
}
