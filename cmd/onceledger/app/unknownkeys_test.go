package app

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
)

// Every unknown key counts; the warning names the key and the variable,
// at most once a minute per provider, and says how many it left out.
func TestUnknownKeysCountAndWarnRateLimited(t *testing.T) {
	var logs bytes.Buffer
	u := NewUnknownKeys(slog.New(slog.NewTextHandler(&logs, nil)))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	u.now = func() time.Time { return now }
	for range 5 {
		u.Report("wechatpay", "5157F09EFDC096DE15EBE81A47057A7232F1B8E1")
	}
	assert.Equal(t, 5.0, testutil.ToFloat64(u.counter.WithLabelValues("wechatpay")))
	assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"))
	assert.Contains(t, logs.String(), "key=5157F09EFDC096DE15EBE81A47057A7232F1B8E1")
	assert.Contains(t, logs.String(), "variable=ONCELEDGER_WECHATPAY_KEYS")
	now = now.Add(time.Minute)
	u.Report("wechatpay", "PUB_KEY_ID_2")
	assert.Equal(t, 2, strings.Count(logs.String(), "level=WARN"))
	assert.Contains(t, logs.String(), "more_since_last_warning=4")
}
