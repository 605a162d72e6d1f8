package main_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/httpapi/apiclient"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

// TestOpenAPIClientDecodesAnswers calls a real server through the generated
// client: its types decode what the handlers send.
func TestOpenAPIClientDecodesAnswers(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	srv := httptest.NewServer(httpapi.NewHandler(httpapi.Config{
		Logger: slog.New(slog.DiscardHandler), APITokens: []string{"tok"},
		Query: readmodel.New(pool), Events: postgres.NewEventStore(pool),
		Projections: projections.StatusReader{Feed: postgres.NewEventStore(pool), DB: readmodel.New(pool)},
	}))
	defer srv.Close()
	bearer := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer tok")
		return nil
	}
	c, err := apiclient.NewClientWithResponses(srv.URL, apiclient.WithHTTPClient(srv.Client()), apiclient.WithRequestEditorFn(bearer))
	require.NoError(t, err)

	bal, err := c.GetBalancesWithResponse(ctx, &apiclient.GetBalancesParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, bal.StatusCode(), string(bal.Body))
	require.NotNil(t, bal.JSON200)
	assert.Empty(t, bal.JSON200.Balances)

	projs, err := c.GetProjectionsWithResponse(ctx, &apiclient.GetProjectionsParams{})
	require.NoError(t, err)
	require.NotNil(t, projs.JSON200, string(projs.Body))
	assert.Len(t, projs.JSON200.Projections, len(projections.Default())) // ledger, payments, payouts, reconciliation

	pay, err := c.GetPaymentWithResponse(ctx, "stripe", "pi_missing", &apiclient.GetPaymentParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, pay.StatusCode())
	require.NotNil(t, pay.JSON404, string(pay.Body))

	anon, err := apiclient.NewClientWithResponses(srv.URL, apiclient.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	denied, err := anon.GetBalancesWithResponse(ctx, &apiclient.GetBalancesParams{})
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, denied.StatusCode())
	require.NotNil(t, denied.JSON401, string(denied.Body))
}
