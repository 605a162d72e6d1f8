package bankstatement

import "github.com/onceledger/onceledger/domain/payment"

// Fold folds a stream's history into a new State.
func Fold(account string, arrivalDays int, history []payment.Event) (*State, error) {
	s := NewState(account, arrivalDays)
	for _, e := range history {
		if err := s.Apply(e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// AccountOf returns the account a bank stream id names, and whether it is
// one.
func AccountOf(stream string) (string, bool) {
	if len(stream) > len(StreamPrefix) && stream[:len(StreamPrefix)] == StreamPrefix {
		return stream[len(StreamPrefix):], true
	}
	return "", false
}
