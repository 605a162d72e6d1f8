package wechatpay

import (
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
)

// ParseKeys reads the entries of ONCELEDGER_WECHATPAY_KEYS, each
// SERIAL=FILE (a platform certificate's serial, or a PUB_KEY_ID_… id, and
// the PEM file of that certificate or public key), into the map New takes,
// reading each file with read (os.ReadFile). Blank entries are skipped.
func ParseKeys(entries []string, read func(name string) ([]byte, error)) (map[string][]byte, error) {
	out := map[string][]byte{}
	seen := map[string]bool{}
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		serial, file, ok := strings.Cut(e, "=")
		serial, file = strings.TrimSpace(serial), strings.TrimSpace(file)
		if !ok || serial == "" || file == "" {
			return nil, fmt.Errorf("%s entry %d (%q) is not SERIAL=FILE", EnvKeys, i+1, e)
		}
		if seen[strings.ToUpper(serial)] {
			return nil, fmt.Errorf("%s names %s twice", EnvKeys, serial)
		}
		seen[strings.ToUpper(serial)] = true
		b, err := read(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", EnvKeys, serial, err)
		}
		out[serial] = b
	}
	return out, nil
}

// ParseAPIv3Keys reads the entries of ONCELEDGER_WECHATPAY_APIV3_KEYS: each
// the 32-character APIv3 key as set in the merchant platform (its bytes are
// the AES-256 key). Blank entries are skipped; a key of another length is
// an error naming the entry by position, never echoing it.
func ParseAPIv3Keys(entries []string) ([][]byte, error) {
	return providers.Keys(entries, func(pos int, s string) ([]byte, error) {
		if len(s) != APIv3KeySize {
			return nil, fmt.Errorf("%s entry %d is %d bytes; an APIv3 key is %d", EnvAPIv3Keys, pos, len(s), APIv3KeySize)
		}
		return []byte(s), nil
	})
}

// ParseMerchantIDs reads the entries of ONCELEDGER_WECHATPAY_MCHIDS,
// trimmed, blank ones skipped (New checks that they are merchant ids).
func ParseMerchantIDs(entries []string) []string {
	var out []string
	for _, e := range entries {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
