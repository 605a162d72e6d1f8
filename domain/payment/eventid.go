package payment

import (
	"strconv"

	"github.com/google/uuid"
)

// EventIDNamespace is the UUIDv5 namespace of domain event ids. It is fixed
// forever: changing it would give already-recorded decisions new ids, and a
// retried append would no longer be recognised as the same one.
var EventIDNamespace = uuid.MustParse("ecf5caa9-bd70-4860-bf2c-fae922f7ca8e")

// EventID is the deterministic id of the index-th event decided for one
// delivery: UUIDv5 of provider, dedup key and index, separated by NUL bytes so
// that no two different triples hash the same name ("a"+"bc" vs "ab"+"c").
// Deciding the same delivery on the same history yields the same events, so a
// retried append carries the same ids and the event store rejects or ignores
// the copy.
func EventID(providerName, dedupKey string, index int) uuid.UUID {
	name := providerName + "\x00" + dedupKey + "\x00" + strconv.Itoa(index)
	return uuid.NewSHA1(EventIDNamespace, []byte(name))
}
