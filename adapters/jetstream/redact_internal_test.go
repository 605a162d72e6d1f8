package jetstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"nats://127.0.0.1:4222":                           "nats://127.0.0.1:4222",
		"nats://alice:pw@nats.example:4222":               "nats://alice:xxxxx@nats.example:4222",
		"nats://TOKEN@nats.example:4222":                  "nats://xxxxx@nats.example:4222",
		"tls://a:pw@n1:4222, nats://TOKEN@n2:4222":        "tls://a:xxxxx@n1:4222,nats://xxxxx@n2:4222",
		"nats://al ice:p w@n1":                            "<redacted>",
		"n1:4222":                                         "n1:4222",
		"nats://alice:pw@nats.example:4222/?x=1#fragment": "nats://alice:xxxxx@nats.example:4222/?x=1#fragment",
	}
	for in, want := range cases {
		assert.Equal(t, want, RedactURL(in), in)
	}
	assert.Equal(t, "dial nats://xxxxx@n2: refused", scrub("dial nats://TOKEN@n2: refused", "nats://TOKEN@n2"))
	assert.Equal(t, "dial nats://a:xxxxx@n2", scrub("dial nats://a:pw@n2", "nats://a:pw@n2"))
	// A secret holding a reserved character is escaped in the URL: the
	// error may quote it escaped or decoded, and neither form may remain.
	assert.Equal(t, "dial nats://a:xxxxx@n2 (xxxxx xxxxx)", scrub("dial nats://a:p%40w%3F@n2 (p@w? p@w?)", "nats://a:p%40w%3F@n2"))
	assert.Equal(t, "dial nats://xxxxx@n2", scrub("dial nats://t%2Fk@n2", "nats://t%2Fk@n2"))
}
