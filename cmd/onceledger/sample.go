package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
)

// sampleCmd signs a sample capture with the configured secret and posts it,
// so a newcomer can watch "accepted" then "duplicate" for the same id.
type sampleCmd struct {
	Provider        string   `name:"provider" default:"standard" enum:"standard,stripe" help:"Which provider's scheme to sign with."`
	URL             string   `name:"url" help:"Base URL of a running onceledger serve (default: http:// and ONCELEDGER_ADDR, its host loopback when the address names none)."`
	Addr            string   `name:"addr" env:"ONCELEDGER_ADDR" default:":8080" hidden:"" help:"The server's listen address, which the default URL follows."`
	ID              string   `name:"id" default:"msg_sample_1" help:"Event id (dedup key); send the same one twice to see the duplicate."`
	Payment         string   `name:"payment" default:"pay_sample_1" help:"Payment id."`
	Amount          int64    `name:"amount" default:"1000" help:"Amount in minor units."`
	Currency        string   `name:"currency" default:"USD" help:"ISO 4217 currency."`
	StandardSecrets []string `name:"standard-secrets" env:"ONCELEDGER_STANDARD_SECRETS" sep:"," help:"Signs with the first one."`
	StripeSecrets   []string `name:"stripe-secrets" env:"ONCELEDGER_STRIPE_SECRETS" sep:"," help:"Signs with the first one."`

	at time.Time // the signing time (tests); zero: now
}

func (c *sampleCmd) Run(g *globals) error {
	now := c.at
	if now.IsZero() {
		now = time.Now()
	}
	var body []byte
	header := http.Header{"Content-Type": {"application/json"}}
	switch c.Provider {
	case "standard":
		secrets := providers.NonEmpty(c.StandardSecrets)
		if len(secrets) == 0 {
			return fmt.Errorf("set ONCELEDGER_STANDARD_SECRETS (the server's secret) to sign the sample")
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secrets[0], "whsec_"))
		if err != nil {
			return fmt.Errorf("ONCELEDGER_STANDARD_SECRETS: not whsec_<base64>: %w", err)
		}
		body, _ = json.Marshal(map[string]any{
			"type": "payment.captured", "timestamp": now.UTC().Format(time.RFC3339),
			"data": map[string]any{"payment_id": c.Payment, "capture_id": "cap_" + c.Payment,
				"amount": c.Amount, "currency": c.Currency, "fee": c.Amount * 3 / 100},
		})
		ts := strconv.FormatInt(now.Unix(), 10)
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(c.ID + "." + ts + "."))
		mac.Write(body)
		header.Set("webhook-id", c.ID)
		header.Set("webhook-timestamp", ts)
		header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	case "stripe":
		secrets := providers.NonEmpty(c.StripeSecrets)
		if len(secrets) == 0 {
			return fmt.Errorf("set ONCELEDGER_STRIPE_SECRETS (the server's secret) to sign the sample")
		}
		body, _ = json.Marshal(map[string]any{
			"id": c.ID, "object": "event", "type": "charge.succeeded", "created": now.Unix(),
			"data": map[string]any{"object": map[string]any{
				"id": "ch_" + c.Payment, "object": "charge", "payment_intent": c.Payment,
				"amount": c.Amount, "amount_captured": c.Amount, "captured": true,
				"currency": strings.ToLower(c.Currency), "status": "succeeded"}},
		})
		ts := strconv.FormatInt(now.Unix(), 10)
		mac := hmac.New(sha256.New, []byte(secrets[0]))
		mac.Write([]byte(ts + "."))
		mac.Write(body)
		header.Set("Stripe-Signature", "t="+ts+",v1="+hex.EncodeToString(mac.Sum(nil)))
	}
	base, err := c.baseURL()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(g.ctx, http.MethodPost,
		strings.TrimRight(base, "/")+"/webhooks/"+c.Provider, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = header
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("send sample: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Printf("POST %s → %s %s\n", req.URL, resp.Status, bytes.TrimSpace(answer))
	if resp.StatusCode/100 != 2 {
		return &exitError{code: 1, err: fmt.Errorf("server answered %s", resp.Status)}
	}
	return nil
}

// baseURL is --url when given, else the server's own listen address
// (ONCELEDGER_ADDR, as `make run` and `serve` read it): README tells a
// newcomer to change the address with that variable, and `sample` must follow
// it rather than post to :8080. A listen address without a host, or with an
// unspecified one (0.0.0.0, ::), is reached on loopback.
func (c *sampleCmd) baseURL() (string, error) {
	if c.URL != "" {
		return c.URL, nil
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return "", fmt.Errorf("ONCELEDGER_ADDR %q: %w", c.Addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
