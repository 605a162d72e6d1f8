package providers

import (
	"crypto/hmac"
	"fmt"
	"strings"
)

// Keys turns the configured secrets of a key-rotation list into keys. Each
// entry is trimmed and blank entries are skipped (an unused rotation slot);
// decode turns the others into key bytes and is given the entry's 1-based
// position, so that its error can name the entry without echoing the
// secret. A nil decode takes the text's bytes as they are. An empty result
// is not an error here: each adapter says in its own words that nothing is
// configured.
func Keys(secrets []string, decode func(pos int, secret string) ([]byte, error)) ([][]byte, error) {
	var keys [][]byte
	for i, s := range secrets {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if decode == nil {
			keys = append(keys, []byte(s))
			continue
		}
		k, err := decode(i+1, s)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// MatchAny reports whether any of sigs equals mac(key) for any of keys. Every
// pair is compared, in constant time and without stopping at a match, so the
// time taken does not tell which key or which signature matched.
func MatchAny(keys [][]byte, mac func(key []byte) []byte, sigs ...[]byte) bool {
	matched := false
	for _, k := range keys {
		expected := mac(k)
		for _, sig := range sigs {
			if hmac.Equal(expected, sig) {
				matched = true
			}
		}
	}
	return matched
}

// CheckEntries runs check on each non-blank entry of a configured list
// (trimmed, as Keys gives them to decode) and names the variable and the
// entry's 1-based position in its error, never the entry itself: the
// start-up check of a provider's secrets, so that a malformed one is
// refused before the server answers every delivery 401.
func CheckEntries(env string, entries []string, check func(string) error) error {
	for i, s := range entries {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if err := check(s); err != nil {
			return fmt.Errorf("%s: entry %d: %w", env, i+1, err)
		}
	}
	return nil
}
