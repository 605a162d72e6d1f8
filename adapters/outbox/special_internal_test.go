package outbox

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

// One row per registry range (issue 33, finding 6): its first and last
// addresses and one inside are refused, naming the range; the neighbours
// just outside are public and allowed.
func TestSpecialPurposeRanges(t *testing.T) {
	cases := []struct {
		prefix       string
		in           []string
		outside      []string
		wantInReason string
	}{
		{"0.0.0.0/8", []string{"0.0.0.0", "0.1.2.3", "0.255.255.255"}, []string{"1.0.0.1"}, "0.0.0.0/8"},
		{"10.0.0.0/8", []string{"10.0.0.0", "10.255.255.255"}, []string{"11.0.0.1", "9.255.255.254"}, "10.0.0.0/8"},
		{"100.64.0.0/10", []string{"100.64.0.0", "100.100.100.200", "100.127.255.255"}, []string{"100.63.255.255", "100.128.0.0"}, "100.64.0.0/10"},
		{"127.0.0.0/8", []string{"127.0.0.1", "127.255.255.254"}, []string{"128.0.0.1"}, "loopback"},
		{"169.254.0.0/16", []string{"169.254.169.254", "169.254.0.1"}, []string{"169.253.255.255", "169.255.0.1"}, "link-local"},
		{"172.16.0.0/12", []string{"172.16.0.1", "172.31.255.255"}, []string{"172.15.255.255", "172.32.0.0"}, "172.16.0.0/12"},
		{"192.0.0.0/24", []string{"192.0.0.0", "192.0.0.8", "192.0.0.170", "192.0.0.255"}, []string{"192.0.1.0"}, "192.0.0.0/24"},
		{"192.0.2.0/24", []string{"192.0.2.1"}, []string{"192.0.3.1"}, "TEST-NET-1"},
		{"192.88.99.0/24", []string{"192.88.99.1"}, []string{"192.88.98.1"}, "6to4 relay"},
		{"192.168.0.0/16", []string{"192.168.0.1", "192.168.255.255"}, []string{"192.169.0.1"}, "192.168.0.0/16"},
		{"198.18.0.0/15", []string{"198.18.0.0", "198.19.255.255"}, []string{"198.17.255.255", "198.20.0.0"}, "benchmarking"},
		{"198.51.100.0/24", []string{"198.51.100.7"}, []string{"198.51.101.7"}, "TEST-NET-2"},
		{"203.0.113.0/24", []string{"203.0.113.7"}, []string{"203.0.114.7"}, "TEST-NET-3"},
		{"224.0.0.0/4", []string{"224.0.0.1", "239.255.255.255"}, []string{"223.255.255.255"}, "multicast"},
		{"240.0.0.0/4", []string{"240.0.0.1", "255.255.255.254"}, nil, "240.0.0.0/4"},
		{"255.255.255.255/32", []string{"255.255.255.255"}, nil, "limited broadcast"},
		{"::ffff:0:0/96", []string{"::ffff:127.0.0.1", "::ffff:100.100.100.200", "::ffff:10.1.2.3"}, []string{"::ffff:8.8.8.8"}, "RFC"},
		{"64:ff9b::/96", []string{"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::6464:64c8", "64:ff9b::c0a8:101"}, []string{"64:ff9b::808:808"}, "NAT64"},
		{"64:ff9b:1::/48", []string{"64:ff9b:1::808:808", "64:ff9b:1:ffff::1"}, nil, "local-use"},
		{"2002::/16", []string{"2002:7f00:1::1", "2002:a00:1::", "2002:6464:64c8::1", "2002:c0a8:101::1"}, []string{"2002:808:808::1"}, "6to4"},
		{"2001::/32", []string{"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff"}, nil, "Teredo"},
		{"2001::/23", []string{"2001:2::1", "2001:10::1", "2001:1ff::1"}, []string{"2001:200::1"}, "2001::/23"},
		{"2001:db8::/32", []string{"2001:db8::1"}, []string{"2001:db9::1"}, "documentation"},
		{"3fff::/20", []string{"3fff::1", "3fff:fff::1"}, []string{"3fff:1000::1"}, "documentation"},
		{"::/128", []string{"::"}, nil, "unspecified"},
		{"::1/128", []string{"::1"}, nil, "loopback"},
		{"::/8 (IPv4-compatible, reserved)", []string{"::127.0.0.1", "::a00:1"}, nil, "2000::/3"},
		{"100::/64", []string{"100::1"}, nil, "2000::/3"},
		{"5f00::/16", []string{"5f00::1"}, nil, "2000::/3"},
		{"fc00::/7", []string{"fc00::1", "fd12:3456::1"}, nil, "unique local"},
		{"fe80::/10", []string{"fe80::1", "febf::1"}, nil, "link-local"},
		{"fec0::/10", []string{"fec0::1"}, nil, "site-local"},
		{"ff00::/8", []string{"ff02::1", "ff05::2"}, nil, "multicast"},
	}
	for _, c := range cases {
		t.Run(c.prefix, func(t *testing.T) {
			for _, s := range c.in {
				why := refused(net.ParseIP(s))
				assert.NotEmpty(t, why, "%s must be refused", s)
				assert.Contains(t, why, c.wantInReason, s)
				// Bracketed when IPv6 (JoinHostPort): unbracketed, the URL
				// does not parse, and its error said nothing of the range.
				assert.ErrorIs(t, CheckURL("http://"+net.JoinHostPort(netip.MustParseAddr(s).String(), "443")+"/", false), ErrRefusedAddress, s)
				assert.ErrorIs(t, control("tcp", net.JoinHostPort(s, "443"), nil), ErrRefusedAddress, s)
			}
			for _, s := range c.outside {
				assert.Empty(t, refused(net.ParseIP(s)), "%s must be allowed", s)
				assert.NoError(t, CheckURL("http://"+net.JoinHostPort(netip.MustParseAddr(s).String(), "443")+"/", false), s)
			}
		})
	}
}

// Globally reachable addresses, among them the registry's globally
// reachable special entries, are allowed.
func TestGloballyReachableAllowed(t *testing.T) {
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "192.31.196.1", "192.52.193.1", "192.175.48.1",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2001:1::1", "2001:3::1", "2001:4:112::1", "2620:4f:8000::1",
		"2001:200::1", "2a00:1450:4001::1"} {
		assert.Empty(t, refused(net.ParseIP(s)), s)
	}
	assert.NotEmpty(t, refused(nil))
	assert.Contains(t, classify(netip.MustParseAddr("::ffff:169.254.169.254")), "IPv4-mapped embedding 169.254.169.254")
	assert.Contains(t, classify(netip.MustParseAddr("fe80::1%eth0")), "link-local")
}
