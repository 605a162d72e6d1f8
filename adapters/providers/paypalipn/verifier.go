package paypalipn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultVerifyURL is PayPal's live IPN postback endpoint.
const DefaultVerifyURL = "https://ipnpb.paypal.com/cgi-bin/webscr"

// Verdict is PayPal's answer to a postback.
type Verdict string

const (
	Verified Verdict = "VERIFIED" // PayPal sent this message: apply it
	Invalid  Verdict = "INVALID"  // PayPal did not: keep it, mark it, never apply it
)

// ErrPostback: the postback got no verdict (transport error, non-200 status,
// unexpected body). Nothing is known about the message; retry later.
var ErrPostback = errors.New("paypal IPN postback failed")

// Verifier posts IPN messages back to PayPal.
type Verifier struct {
	URL    string       // DefaultVerifyURL if empty
	Client *http.Client // a client with a 30 s timeout if nil
}

var defaultClient = &http.Client{Timeout: 30 * time.Second}

// Verify posts "cmd=_notify-validate&" + raw to PayPal, raw unchanged (same
// field order and encoding, or PayPal answers INVALID), and returns PayPal's
// verdict, or an error wrapping ErrPostback when there is none.
func (v Verifier) Verify(ctx context.Context, raw []byte) (Verdict, error) {
	target := v.URL
	if target == "" {
		target = DefaultVerifyURL
	}
	client := v.Client
	if client == nil {
		client = defaultClient
	}
	body := make([]byte, 0, len("cmd=_notify-validate&")+len(raw))
	body = append(append(body, "cmd=_notify-validate&"...), raw...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrPostback, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// PayPal refuses postbacks without a User-Agent.
	req.Header.Set("User-Agent", "onceledger-ipn-verifier/1")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrPostback, err)
	}
	defer resp.Body.Close()
	// The answer is one short word; anything longer is not an answer.
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return "", fmt.Errorf("%w: reading answer: %v", ErrPostback, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: status %d", ErrPostback, resp.StatusCode)
	}
	switch string(bytes.TrimSpace(answer)) {
	case string(Verified):
		return Verified, nil
	case string(Invalid):
		return Invalid, nil
	default:
		return "", fmt.Errorf("%w: unexpected answer %q", ErrPostback, answer)
	}
}
