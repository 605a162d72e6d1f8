package admission

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClientKeyGroupsIPv6ByItsSlash64: one IPv6 client holds a /64 (a
// home or a cloud instance gets one; its host part is its own to pick), so
// a cap per /128 address bounded nothing: every connection from another
// address of the same /64. IPv4 (mapped too) is per address.
func TestClientKeyGroupsIPv6ByItsSlash64(t *testing.T) {
	key := func(s string) string {
		k, _ := clientKey(&net.TCPAddr{IP: net.ParseIP(s), Port: 40000})
		return k
	}
	assert.Equal(t, key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff:ffff:ffff:fffe"), "one /64")
	assert.NotEqual(t, key("2001:db8:1:2::1"), key("2001:db8:1:3::1"), "another /64")
	assert.Equal(t, key("192.0.2.7"), key("::ffff:192.0.2.7"), "IPv4 mapped or not")
	assert.NotEqual(t, key("192.0.2.7"), key("192.0.2.8"))
	assert.Equal(t, "192.0.2.7", key("192.0.2.7"), "the log names the address")
	_, loop := clientKey(&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1})
	assert.True(t, loop)
	_, loop = clientKey(&net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 1})
	assert.True(t, loop)
	_, loop = clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 1})
	assert.False(t, loop)
}
