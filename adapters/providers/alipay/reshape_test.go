package alipay

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// foldValue reshapes a signed body as an attacker can without the key: the
// parameter folded is removed and appended, percent-encoded, to into's
// value as "&folded=value". The decoded "k=v" pairs joined by '&' are the
// same bytes, so the signature still covers them.
func foldValue(t *testing.T, body []byte, into, folded string) []byte {
	t.Helper()
	segs := strings.Split(string(body), "&")
	var foldedRaw string
	out := segs[:0]
	for _, s := range segs {
		if strings.HasPrefix(s, folded+"=") {
			foldedRaw = strings.TrimPrefix(s, folded+"=")
			continue
		}
		out = append(out, s)
	}
	require.NotEmpty(t, foldedRaw, "no %s in the body", folded)
	for i, s := range out {
		if strings.HasPrefix(s, into+"=") {
			out[i] = s + "%26" + url.QueryEscape(folded) + "%3D" + foldedRaw
			return []byte(strings.Join(out, "&"))
		}
	}
	t.Fatalf("no %s in the body", into)
	return nil
}

// foldKey reshapes a signed body the other way: key=value&next becomes one
// parameter name, next's value its value.
func foldKey(t *testing.T, body []byte, key, next string) []byte {
	t.Helper()
	segs := strings.Split(string(body), "&")
	var keyRaw, nextRaw string
	out := segs[:0]
	for _, s := range segs {
		switch {
		case strings.HasPrefix(s, key+"="):
			keyRaw = strings.TrimPrefix(s, key+"=")
		case strings.HasPrefix(s, next+"="):
			nextRaw = strings.TrimPrefix(s, next+"=")
		default:
			out = append(out, s)
		}
	}
	require.NotEmpty(t, keyRaw)
	require.NotEmpty(t, nextRaw)
	out = append([]string{key + "%3D" + keyRaw + "%26" + next + "=" + nextRaw}, out...)
	return []byte(strings.Join(out, "&"))
}

// A genuine notification reshaped so that a later parameter is folded into
// an earlier one (its value or its name) carries the same signed content;
// it is refused before verification, as unauthorized.
func TestReshapedNotificationsRefused(t *testing.T) {
	a := newAdapter(t)
	good := signedBody(t, notification(), signOpts{})
	_, err := parse(a, good)
	require.NoError(t, err)

	byValue := foldValue(t, good, "trade_no", "trade_status")
	require.Contains(t, string(byValue), "trade_no=2026112922001400000000000001%26trade_status%3DTRADE_SUCCESS")
	f, err := parseForm(byValue)
	require.NoError(t, err)
	g, err := parseForm(good)
	require.NoError(t, err)
	require.Equal(t, string(g.signedContent()), string(f.signedContent()), "the reshaped copy signs the same content")

	byKey := foldKey(t, good, "trade_no", "trade_status")
	f, err = parseForm(byKey)
	require.NoError(t, err)
	require.Equal(t, string(g.signedContent()), string(f.signedContent()), "the reshaped copy signs the same content")

	refund := signedBody(t, notification(kv{"refund_fee", "10.00"}, kv{"out_biz_no", "biz-1"}, kv{"gmt_refund", "2026-11-30 09:00:00"}), signOpts{})
	cases := map[string]struct {
		body   []byte
		reason string
	}{
		"trade_status folded into trade_no's value": {byValue, `trade_no holds "&trade_status="`},
		"trade_no=…&trade_status as one name":       {byKey, "holds '&' or '='"},
		"refund_fee folded into receipt_amount":     {foldValue(t, refund, "receipt_amount", "refund_fee"), `"&refund_fee="`},
		"gmt_refund folded into gmt_payment":        {foldValue(t, refund, "gmt_payment", "gmt_refund"), `"&gmt_refund="`},
	}
	for name, c := range cases {
		providertest.CheckRefusal(t, a, name, providers.Request{Body: c.body}, c.reason)
	}
}

// Values that merely hold '&' or '=' are genuine and still verify.
func TestAmpersandInValueStillVerifies(t *testing.T) {
	a := newAdapter(t)
	for _, subject := range []string{"A&B", "A & B", "A&", "&", "A=B", "x=1&", "50% & more", "A&=B", "a&&b", "a& b=c"} {
		evs, err := parse(a, signedBody(t, notification(kv{"subject", subject}), signOpts{}))
		require.NoError(t, err, "subject %q", subject)
		require.Len(t, evs, 1, "subject %q", subject)
	}
}

// The other direction: a genuine value holding '&', text that is not a
// name (a space) and '=' can be split by a copy into two parameters, the
// second named by that text; when the new name sorts right after the
// value's key, the signed content is the same and the copy verified,
// recorded with the value cut short. A name that is not a name is refused;
// the genuine notification still verifies.
func TestSplitNotificationRefused(t *testing.T) {
	a := newAdapter(t)
	good := signedBody(t, notification(kv{"subject", "x&t b=y"}), signOpts{})
	require.Contains(t, string(good), "subject=x%26t+b%3Dy&")
	split := []byte(strings.Replace(string(good), "subject=x%26t+b%3Dy&", "subject=x&t+b=y&", 1))
	f, err := parseForm(split)
	require.NoError(t, err)
	g, err := parseForm(good)
	require.NoError(t, err)
	require.Equal(t, string(g.signedContent()), string(f.signedContent()), "the split copy signs the same content")
	require.Equal(t, "x", f.get("subject"))
	require.Equal(t, "y", f.get("t b"))

	providertest.CheckRefusal(t, a, "the split copy", providers.Request{Body: split}, `"t b" is not a name`)
	evs, err := parse(a, good)
	require.NoError(t, err, "the genuine notification")
	require.Len(t, evs, 1)
}
