package stripeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// RateLimitedError is a 429 answer to a single retrieval, which the caller
// schedules itself (the expectation asker): no retry here.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("stripe api: 429, retry after %s", e.RetryAfter)
}

// Unwrap is ErrRateLimited.
func (e *RateLimitedError) Unwrap() error { return ErrRateLimited }

// PaymentIntent retrieves GET /v1/payment_intents/{id} with its latest
// charge expanded (expand[]=latest_charge), once: a 429 is a
// *RateLimitedError with its Retry-After, an unknown id an *APIError of
// status 404. The answer is returned as received. Stripe signs no API
// answer: it is believed as what api.stripe.com said over TLS to our
// secret key, after the caller checks it is the object asked for.
func (c *Client) PaymentIntent(ctx context.Context, id string) ([]byte, error) {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/payment_intents/" + id
	u.RawQuery = url.Values{"expand[]": {"latest_charge"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("stripe api: GET /v1/payment_intents: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("stripe api: GET /v1/payment_intents: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, &RateLimitedError{RetryAfter: c.wait(resp.Header.Get("Retry-After"), 0)}
	case resp.StatusCode/100 != 2:
		e := &APIError{Status: resp.StatusCode}
		var w struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &w) == nil {
			e.Type, e.Message = w.Error.Type, w.Error.Message
		}
		return nil, e
	}
	return body, nil
}
