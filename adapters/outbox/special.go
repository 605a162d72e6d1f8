package outbox

import (
	"encoding/binary"
	"net/netip"
)

// The addresses a subscription endpoint may not have (without
// ONCELEDGER_OUTBOX_ALLOW_PRIVATE) are those the IANA special-purpose
// address registries do not mark globally reachable:
// https://www.iana.org/assignments/iana-ipv4-special-registry and
// https://www.iana.org/assignments/iana-ipv6-special-registry (RFC 6890
// and its updates), plus multicast and, for IPv6, everything outside
// 2000::/3, the only global unicast space IANA allocates
// (https://www.iana.org/assignments/ipv6-address-space). An address that
// embeds an IPv4 address is classified by it where the registry says the
// embedding reaches it (IPv4-mapped, the NAT64 well-known prefix, 6to4);
// the local-use NAT64 prefix and Teredo (whose client address is
// obfuscated and whose relays are not ours to trust) are refused whole.
// Issue 33 found 100.64.0.0/10 (with Alibaba Cloud's metadata service at
// 100.100.100.200), 192.0.0.0/24, 198.18.0.0/15, 0.0.0.0/8, 240.0.0.0/4,
// 255.255.255.255, NAT64 and 6to4 embeddings and Teredo accepted.

// special is one registry entry: the prefix and its name (what the
// refusal says).
type special struct {
	prefix netip.Prefix
	name   string
}

func sp(p, name string) special { return special{netip.MustParsePrefix(p), name} }

// refusedV4 are the IPv4 special-purpose blocks not globally reachable,
// and multicast. 192.0.0.0/24 is refused whole, its two anycast /32s
// (192.0.0.9 PCP, 192.0.0.10 TURN) being no webhook receivers.
// Globally reachable entries (192.31.196.0/24 and 192.175.48.0/24 AS112,
// 192.52.193.0/24 AMT) are allowed, as any public address.
var refusedV4 = []special{
	sp("0.0.0.0/8", `"this network" (RFC 791)`),
	sp("10.0.0.0/8", "private-use (RFC 1918)"),
	sp("100.64.0.0/10", "shared address space, carrier-grade NAT and cloud metadata such as 100.100.100.200 (RFC 6598)"),
	sp("127.0.0.0/8", "loopback (RFC 1122)"),
	sp("169.254.0.0/16", "link-local, cloud metadata such as 169.254.169.254 (RFC 3927)"),
	sp("172.16.0.0/12", "private-use (RFC 1918)"),
	sp("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
	sp("192.0.2.0/24", "documentation, TEST-NET-1 (RFC 5737)"),
	sp("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)"),
	sp("192.168.0.0/16", "private-use (RFC 1918)"),
	sp("198.18.0.0/15", "benchmarking (RFC 2544)"),
	sp("198.51.100.0/24", "documentation, TEST-NET-2 (RFC 5737)"),
	sp("203.0.113.0/24", "documentation, TEST-NET-3 (RFC 5737)"),
	sp("224.0.0.0/4", "multicast (RFC 5771)"),
	sp("255.255.255.255/32", "limited broadcast (RFC 919)"), // before 240.0.0.0/4, which holds it
	sp("240.0.0.0/4", "reserved (RFC 1112)"),
}

// allowedV6 are the globally reachable entries inside 2001::/23, which is
// refused otherwise.
var allowedV6 = []special{
	sp("2001:1::1/128", "PCP anycast (RFC 7723)"),
	sp("2001:1::2/128", "TURN anycast (RFC 8155)"),
	sp("2001:1::3/128", "DNS-SD SRP anycast (RFC 9665)"),
	sp("2001:3::/32", "AMT (RFC 7450)"),
	sp("2001:4:112::/48", "AS112-v6 (RFC 7535)"),
	sp("2001:20::/28", "ORCHIDv2 (RFC 7343)"),
	sp("2001:30::/28", "drone remote ID (RFC 9374)"),
}

// refusedV6 are the IPv6 blocks inside 2000::/3 not globally reachable
// (the blocks outside it are refused as not global unicast). Teredo comes
// before 2001::/23, which holds it, so that the refusal names it.
var refusedV6 = []special{
	sp("2001::/32", "Teredo (RFC 4380), its IPv4 address obfuscated"),
	sp("2001::/23", "IETF protocol assignments (RFC 2928)"),
	sp("2001:db8::/32", "documentation (RFC 3849)"),
	sp("3fff::/20", "documentation (RFC 9637)"),
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64v1   = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
	global6   = netip.MustParsePrefix("2000::/3")
)

// classify returns why a is refused, "" when it is a globally reachable
// address an endpoint may have.
func classify(a netip.Addr) string {
	if !a.IsValid() {
		return "not an IP address"
	}
	a = a.WithZone("")
	if a.Is4In6() {
		return embedded("IPv4-mapped", a.Unmap())
	}
	if a.Is4() {
		return classify4(a)
	}
	switch {
	case nat64.Contains(a):
		b := a.As16()
		return embedded("NAT64 64:ff9b::/96", netip.AddrFrom4([4]byte(b[12:16])))
	case nat64v1.Contains(a):
		return "64:ff9b:1::/48, local-use IPv4/IPv6 translation (RFC 8215)"
	case sixToFour.Contains(a):
		b := a.As16()
		return embedded("6to4 2002::/16", netip.AddrFrom4([4]byte(b[2:6])))
	case !global6.Contains(a):
		return describe6(a)
	}
	for _, s := range allowedV6 {
		if s.prefix.Contains(a) {
			return ""
		}
	}
	for _, s := range refusedV6 {
		if s.prefix.Contains(a) {
			return s.prefix.String() + ", " + s.name
		}
	}
	return ""
}

func classify4(a netip.Addr) string {
	for _, s := range refusedV4 {
		if s.prefix.Contains(a) {
			return s.prefix.String() + ", " + s.name
		}
	}
	return ""
}

// embedded classifies an IPv6 address by the IPv4 address it carries.
func embedded(how string, v4 netip.Addr) string {
	if why := classify4(v4); why != "" {
		return how + " embedding " + v4.String() + ": " + why
	}
	return ""
}

// describe6 names the block of an IPv6 address outside 2000::/3.
func describe6(a netip.Addr) string {
	switch {
	case a.IsUnspecified():
		return "::/128, unspecified (RFC 4291)"
	case a.IsLoopback():
		return "::1/128, loopback (RFC 4291)"
	case a.IsLinkLocalUnicast():
		return "fe80::/10, link-local (RFC 4291)"
	case a.IsMulticast():
		return "ff00::/8, multicast (RFC 4291)"
	case a.IsPrivate():
		return "fc00::/7, unique local (RFC 4193)"
	}
	if binary.BigEndian.Uint16(a.AsSlice()[:2])&0xffc0 == 0xfec0 {
		return "fec0::/10, deprecated site-local (RFC 3879)"
	}
	return "outside 2000::/3, not global unicast (IANA IPv6 address space)"
}
