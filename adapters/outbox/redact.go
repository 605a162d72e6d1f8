package outbox

import (
	"errors"
	"net/url"
)

// Host is the host of a subscription URL, the only part of it that logs,
// errors and reconciliation items name: the rest (path, query, user info)
// is often the endpoint's credential (/services/T/B/SECRET, ?api_key=).
// "" when raw does not parse.
func Host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// attemptError is an attempt's error as recorded and logged: net/http's
// *url.Error quotes the whole URL ("Post \"https://…/SECRET\": EOF"), so
// it is replaced by the host.
func attemptError(err error, host string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + host + ": " + ue.Err.Error()
	}
	return err.Error()
}
