package alipay

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigCheck(t *testing.T) {
	require.NoError(t, (&Config{}).Check(), "none configures nothing")
	assert.False(t, (&Config{}).Configured())
	full := &Config{PublicKeys: []string{"/alipay.pem"}, AppIDs: []string{"2021000000000001"}}
	require.NoError(t, full.Check())
	assert.True(t, full.Configured())
	keys := &Config{PublicKeys: []string{"/alipay.pem"}}
	assert.False(t, keys.Configured())
	assert.ErrorContains(t, keys.Check(), EnvPublicKeys+" needs "+EnvAppIDs)
	ids := &Config{AppIDs: []string{"2021000000000001", ""}}
	assert.ErrorContains(t, ids.Check(), EnvAppIDs+" needs "+EnvPublicKeys)
}
