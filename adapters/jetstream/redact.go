package jetstream

import (
	"net/url"
	"strings"
)

// RedactURL is a NATS server URL (or a comma-separated list of them) fit
// for a log or an error (issue 33: the start error printed it whole). NATS
// takes user info as user:password or as a token alone (nats://TOKEN@host),
// so the user info is replaced whole, not only a password: user:password
// becomes user:xxxxx and a token xxxxx. An entry that does not parse but
// holds an '@' is replaced whole.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = redactOne(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

func redactOne(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.User == nil && strings.Contains(s, "@")) {
		if strings.Contains(s, "@") {
			return "<redacted>"
		}
		return s
	}
	if u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	} else {
		u.User = url.User("xxxxx")
	}
	return u.String()
}

// scrub removes every secret part of urls from msg: the errors of the NATS
// client may quote the server URL they failed on, the secret as it is
// written in the URL (percent-escaped) or decoded.
func scrub(msg, urls string) string {
	for _, p := range strings.Split(urls, ",") {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil || u.User == nil {
			continue
		}
		secret, ok := u.User.Password()
		if !ok || secret == "" {
			secret = u.User.Username()
		}
		if secret == "" {
			continue
		}
		// The user info as written: in the authority (after "//", which
		// a URL with user info has), before its last '@', as url.Parse
		// reads it.
		auth := p[strings.Index(p, "//")+2:]
		if i := strings.IndexAny(auth, "/?#"); i >= 0 {
			auth = auth[:i]
		}
		if i := strings.LastIndex(auth, "@"); i > 0 {
			raw := auth[:i]
			if _, rawPw, hasPw := strings.Cut(raw, ":"); hasPw && ok {
				raw = rawPw
			}
			if raw != "" {
				msg = strings.ReplaceAll(msg, raw, "xxxxx")
			}
		}
		msg = strings.ReplaceAll(msg, secret, "xxxxx")
	}
	return msg
}

// connectError is a failed connection: its text redacted, its cause kept
// for errors.Is.
type connectError struct {
	msg string
	err error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.err }
