package outbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrRefusedAddress: the endpoint's address is not globally reachable
// (special.go: loopback, private, link-local, shared, reserved, …) and
// ONCELEDGER_OUTBOX_ALLOW_PRIVATE is not set.
var ErrRefusedAddress = errors.New("subscription endpoint address refused (not globally reachable: loopback, private, link-local or another IANA special-purpose block; set ONCELEDGER_OUTBOX_ALLOW_PRIVATE to allow)")

// ErrInvalid: a subscription request that cannot be right (a bad URL, an
// unknown type, a bad cursor).
var ErrInvalid = errors.New("invalid subscription")

// Timeout is how long one POST may take before it counts as failed.
const Timeout = 10 * time.Second

// refused returns why ip is one an endpoint may not have without
// ONCELEDGER_OUTBOX_ALLOW_PRIVATE (classify, from the IANA special-purpose
// registries), "" when it may.
func refused(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil { // net.IP holds IPv4 in 16 bytes, mapped
		ip = v4
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return "not an IP address"
	}
	return classify(a)
}

// control runs after the name was resolved and before connecting, with the
// address actually dialled: a name that resolves to a public address when
// checked and to a private one when used (DNS rebinding) is refused here.
func control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
	}
	if why := refused(net.ParseIP(host)); why != "" {
		return fmt.Errorf("%w: %s is in %s", ErrRefusedAddress, host, why)
	}
	return nil
}

// NewClient returns the HTTP client of the sender: Timeout per request, no
// redirects followed (a 3xx is a failed attempt), no proxy from the
// environment (it would connect on the sender's behalf, past the address
// check), and, unless allowPrivate, every connection's address checked.
func NewClient(allowPrivate bool) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           DialerFor(allowPrivate, nil),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: Timeout,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// DialerFor is the client's DialContext: unless allowPrivate, the address
// is checked after resolution, on the socket about to connect. resolve,
// when set, maps the address asked for ("host:port") to the one dialled
// (a test's stand-in for DNS); nil resolves as usual.
func DialerFor(allowPrivate bool, resolve func(addr string) string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = control
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if resolve != nil {
			addr = resolve(addr)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// CheckURL refuses what can never be an endpoint: not http(s), no host,
// credentials in the URL, and (without allowPrivate) an IP literal that
// the connection check would refuse anyway. Names are checked when
// connecting, every time.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%w: url: %w", ErrInvalid, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: url must be http:// or https://", ErrInvalid)
	case u.Hostname() == "":
		return fmt.Errorf("%w: url has no host", ErrInvalid)
	case u.User != nil:
		return fmt.Errorf("%w: url must not carry credentials", ErrInvalid)
	case len(raw) > 2048:
		return fmt.Errorf("%w: url longer than 2048 characters", ErrInvalid)
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && !allowPrivate {
		if why := refused(ip); why != "" {
			return fmt.Errorf("%w: %w: %s is in %s", ErrInvalid, ErrRefusedAddress, ip, why)
		}
	}
	if !allowPrivate && u.Hostname() == "localhost" {
		return fmt.Errorf("%w: %w: localhost", ErrInvalid, ErrRefusedAddress)
	}
	return nil
}
