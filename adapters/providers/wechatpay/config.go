package wechatpay

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
)

// Config is the webhook configuration of WeChat Pay: kong flags with their
// ONCELEDGER_* twins (docs/reference.md, "Configuration"), which the
// provider registry embeds into the commands that build adapters. All
// three are needed; none configures nothing.
type Config struct {
	Keys      []string `name:"wechatpay-keys" env:"ONCELEDGER_WECHATPAY_KEYS" sep:"," help:"SERIAL=FILE entries: WeChat Pay platform certificates (serial in hex) or public keys (PUB_KEY_ID_…), PEM files."`
	APIv3Keys []string `name:"wechatpay-apiv3-keys" env:"ONCELEDGER_WECHATPAY_APIV3_KEYS" sep:"," help:"32-byte APIv3 keys that decrypt notification resources (several: rotation)."`
	MchIDs    []string `name:"wechatpay-mchids" env:"ONCELEDGER_WECHATPAY_MCHIDS" sep:"," help:"WeChat Pay merchant ids (mchid, or sp_mchid) whose notifications are accepted."`
}

// Configured reports whether all three variables are set: otherwise the
// provider's endpoint answers 404 (and Check refuses a partial set).
func (c *Config) Configured() bool {
	return len(providers.NonEmpty(c.Keys)) > 0 && len(providers.NonEmpty(c.APIv3Keys)) > 0 && len(providers.NonEmpty(c.MchIDs)) > 0
}

// Check refuses half a configuration, naming each variable missing, and an
// APIv3 key that is not 32 bytes, at start-up rather than on the first
// notification.
func (c *Config) Check() error {
	vars := []struct {
		env string
		set bool
	}{{EnvKeys, len(providers.NonEmpty(c.Keys)) > 0}, {EnvAPIv3Keys, len(providers.NonEmpty(c.APIv3Keys)) > 0},
		{EnvMchIDs, len(providers.NonEmpty(c.MchIDs)) > 0}}
	var set []string
	var missing []string
	for _, v := range vars {
		if v.set {
			set = append(set, v.env)
		} else {
			missing = append(missing, v.env)
		}
	}
	var errs []error
	if len(set) > 0 && len(missing) > 0 {
		errs = append(errs, fmt.Errorf("wechatpay: %s needs %s", strings.Join(set, " and "), strings.Join(missing, " and ")))
	}
	if _, err := ParseAPIv3Keys(c.APIv3Keys); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// New reads the key files and builds the adapter, telling s.UnknownKey of
// notifications naming a serial that is not configured.
func (c *Config) New(s providers.Settings) (providers.Adapter, error) {
	keys, err := ParseKeys(c.Keys, os.ReadFile)
	if err != nil {
		return nil, err
	}
	api, err := ParseAPIv3Keys(c.APIv3Keys)
	if err != nil {
		return nil, err
	}
	var opts []Option
	if s.UnknownKey != nil {
		hook := s.UnknownKey
		opts = append(opts, OnUnknownSerial(func(serial string) { hook(Name, serial) }))
	}
	return New(keys, api, ParseMerchantIDs(c.MchIDs), s.Tolerance, opts...)
}

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
