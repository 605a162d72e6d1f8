package outbox

import (
	"context"
	"fmt"
)

// KeyCheckStore keeps the check value of ONCELEDGER_SECRETS_KEY (migration
// 00106): a known text sealed with the key.
type KeyCheckStore interface {
	// LoadKeyCheck returns the stored check value, nil when none is.
	LoadKeyCheck(ctx context.Context) ([]byte, error)
	// SaveKeyCheck stores sealed unless a value is stored already (or,
	// with replace, whatever is stored), and returns the value stored
	// (another instance's, if it came first).
	SaveKeyCheck(ctx context.Context, sealed []byte, replace bool) ([]byte, error)
	// AnySealedSecret returns one subscription's id and sealed secret; ok
	// is false when there is none.
	AnySealedSecret(ctx context.Context) (id string, sealed []byte, ok bool, err error)
}

const (
	keyCheckID    = "secrets-key-check" // the check value's associated data
	keyCheckPlain = "onceledger ONCELEDGER_SECRETS_KEY check v1"
)

// VerifyKey refuses a key that cannot open what is stored: the check value
// when there is one; otherwise (a database from before the check) a
// subscription's secret, after which the check value is written, as it is
// on the first start with a key. A well-formed wrong key used to start
// without a word and fail at each subscription's first POST (issue 33).
//
// With no subscription stored, a check value that does not open is
// replaced: nothing sealed with the old key is left to lose, so a new key
// is simply the key from then on.
func VerifyKey(ctx context.Context, s *Sealer, st KeyCheckStore) error {
	stored, err := st.LoadKeyCheck(ctx)
	if err != nil {
		return err
	}
	if stored != nil && s.opensCheck(stored) {
		return nil
	}
	id, sealed, found, err := st.AnySealedSecret(ctx)
	if err != nil {
		return err
	}
	if found {
		if stored != nil {
			return fmt.Errorf("%w: it does not open the stored secrets (the check value sealed with the key in use before; was the key changed?)", ErrBadSecretsKey)
		}
		if _, err := s.Open(id, sealed); err != nil {
			return fmt.Errorf("%w: it does not open the stored subscription secrets (was the key changed?)", ErrBadSecretsKey)
		}
	}
	mine, err := s.Seal(keyCheckID, keyCheckPlain)
	if err != nil {
		return err
	}
	if stored, err = st.SaveKeyCheck(ctx, mine, stored != nil); err != nil {
		return err
	}
	if !s.opensCheck(stored) {
		return fmt.Errorf("%w: another instance stored a check value this key does not open: the instances' keys differ", ErrBadSecretsKey)
	}
	return nil
}

func (s *Sealer) opensCheck(stored []byte) bool {
	plain, err := s.Open(keyCheckID, stored)
	return err == nil && plain == keyCheckPlain
}
