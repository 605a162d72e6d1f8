package outbox

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An attempt's error as recorded and logged names the host, not the URL
// (net/http quotes the whole URL, credentials in its path and query too).
func TestAttemptErrorNamesTheHostOnly(t *testing.T) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://127.0.0.1:1/services/T/B/SECRET?api_key=SECRET", nil)
	require.NoError(t, err)
	_, err = http.DefaultClient.Do(req)
	require.Error(t, err)
	require.Contains(t, err.Error(), "SECRET", "net/http's own error quotes the URL")
	got := attemptError(err, Host("http://127.0.0.1:1/services/T/B/SECRET?api_key=SECRET"))
	assert.NotContains(t, got, "SECRET")
	assert.Contains(t, got, "Post 127.0.0.1: ")
	assert.Equal(t, "hooks.example.com", Host("https://u:SECRET@hooks.example.com:8443/x?y=SECRET"))
}
