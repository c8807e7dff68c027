package executor

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"

	"github.com/sundialhq/sundial"
)

// Guard decides which addresses a delivery may connect to. The executor
// asks it for every address it dials (net.Dialer.ControlContext), after
// name resolution and on every redirect hop, so a name that resolves to a
// refused address, a DNS answer that changes between checks, and a
// redirect are all caught. The zero Guard refuses only what is always
// refused.
//
// Always refused: link-local addresses (169.254.0.0/16, where cloud
// metadata services answer, and fe80::/10), the metadata services that
// answer elsewhere (metadataAddrs), unspecified addresses (0.0.0.0/8,
// ::), multicast addresses, and this node's own listeners (Self). Then Deny refuses, and when Allow is set, only its networks
// are allowed. Private ranges and loopback are allowed unless Deny says
// otherwise: calling internal services is what tasks are for.
type Guard struct {
	Deny  []netip.Prefix // refused; wins over Allow
	Allow []netip.Prefix // when set, the only networks allowed

	// Self are the addresses this node listens on (the API, the
	// profiler). A listener on an unspecified address (0.0.0.0, ::)
	// stands for that port on every address of this host.
	Self []netip.AddrPort

	// LocalAddrs lists this host's addresses, for Self listeners on an
	// unspecified address; nil: the addresses of its network interfaces.
	LocalAddrs func() ([]netip.Addr, error)
}

// RefusedError is a dial the Guard refused.
type RefusedError struct {
	Addr   netip.AddrPort
	Reason string
}

func (e *RefusedError) Error() string {
	return "address " + e.Addr.String() + " refused by the outbound guard: " + e.Reason
}

var (
	linkLocal4   = netip.MustParsePrefix("169.254.0.0/16")
	unspecified4 = netip.MustParsePrefix("0.0.0.0/8")
)

// metadataAddrs are the cloud metadata and platform services that answer
// outside the link-local ranges; always refused, like those.
var metadataAddrs = map[netip.Addr]string{
	netip.MustParseAddr("fd00:ec2::254"):   "AWS's instance metadata service over IPv6",
	netip.MustParseAddr("fd00:ec2::23"):    "AWS's Time Sync and DNS service over IPv6",
	netip.MustParseAddr("100.100.100.200"): "Alibaba Cloud's instance metadata service",
	netip.MustParseAddr("168.63.129.16"):   "Azure's platform service (WireServer)",
}

// Check returns nil when a delivery may connect to ap, or a *RefusedError
// saying why not.
func (g *Guard) Check(ap netip.AddrPort) error {
	ip := ap.Addr().Unmap().WithZone("")
	ap = netip.AddrPortFrom(ip, ap.Port())
	refuse := func(format string, args ...any) error {
		return &RefusedError{Addr: ap, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case !ip.IsValid():
		return refuse("not an IP address")
	case ip.IsLinkLocalUnicast() || linkLocal4.Contains(ip):
		return refuse("link-local addresses (169.254.0.0/16, fe80::/10), where cloud metadata services answer, are always refused")
	case ip.IsUnspecified() || unspecified4.Contains(ip):
		return refuse("unspecified addresses (0.0.0.0/8, ::) are always refused")
	case ip.IsMulticast():
		return refuse("multicast addresses are always refused")
	case metadataAddrs[ip] != "":
		return refuse("it is %s, always refused", metadataAddrs[ip])
	}
	if v4, how := embeddedIPv4(ip); how != "" {
		if err := g.Check(netip.AddrPortFrom(v4, ap.Port())); err != nil {
			return refuse("it carries %s (%s), and %s", v4, how, err.(*RefusedError).Reason)
		}
	}
	if g == nil {
		return nil
	}
	for _, self := range g.Self {
		if g.isSelf(ap, self) {
			return refuse("it is this node's own listener %s", self)
		}
	}
	for _, p := range g.Deny {
		if p.Contains(ip) {
			return refuse("%s is in executor.deny_networks", p)
		}
	}
	if len(g.Allow) == 0 {
		return nil
	}
	for _, p := range g.Allow {
		if p.Contains(ip) {
			return nil
		}
	}
	return refuse("it is not in executor.allow_networks")
}

var (
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	v4Compat    = netip.MustParsePrefix("::/96")
	v4Translate = netip.MustParsePrefix("::ffff:0:0:0/96")
	loopback6   = netip.MustParseAddr("::1")
	unspecific6 = netip.IPv6Unspecified()
)

// embeddedIPv4 returns the IPv4 address an IPv6 address carries by a
// translation or tunnel that reaches it (NAT64, 6to4, the deprecated
// IPv4-compatible form), and which; how is "" for none. IPv4-mapped
// addresses are unmapped before.
func embeddedIPv4(ip netip.Addr) (v4 netip.Addr, how string) {
	if !ip.Is6() {
		return netip.Addr{}, ""
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip) || nat64Local.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64"
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4"
	case v4Compat.Contains(ip) && ip != loopback6 && ip != unspecific6:
		return netip.AddrFrom4([4]byte(b[12:16])), "IPv4-compatible IPv6"
	case v4Translate.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "IPv4-translated IPv6 (SIIT)"
	}
	return netip.Addr{}, ""
}

// isSelf reports whether ap is the listener self.
func (g *Guard) isSelf(ap, self netip.AddrPort) bool {
	if ap.Port() != self.Port() {
		return false
	}
	sip := self.Addr().Unmap().WithZone("")
	if !sip.IsUnspecified() {
		return sip == ap.Addr()
	}
	if ap.Addr().IsLoopback() {
		return true
	}
	local := g.LocalAddrs
	if local == nil {
		local = interfaceAddrs
	}
	addrs, err := local()
	if err != nil {
		return true // cannot tell: refuse the port rather than risk it
	}
	for _, a := range addrs {
		if a.Unmap().WithZone("") == ap.Addr() {
			return true
		}
	}
	return false
}

func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip)
			}
		}
	}
	return out, nil
}

// control is the executor's net.Dialer.ControlContext: the guard's check
// of the address about to be connected to.
func (g *Guard) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Reason: "cannot read the address " + strconv.Quote(address)}
	}
	return g.Check(ap)
}

// CheckURL refuses a target URL whose host is an IP address the guard
// refuses, written in any form a resolver may take for one (dotted,
// decimal 2852039166, hex 0xa9fea9fe, octal, IPv6). A host name passes:
// where it leads is checked when it is dialled. The error names
// target_url.
func (g *Guard) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil // the task's own validation reports it
	}
	// A resolver reads "169.254.169.254." as the address, as it reads an
	// absolute name; and Go's client maps a name through IDNA before it
	// dials, which reads "１６９.２５４.１６９.２５４" as one too.
	host := u.Hostname()
	if ascii, err := idna.Lookup.ToASCII(host); err == nil {
		host = ascii
	}
	ip, ok := literalIP(strings.TrimRight(host, "."))
	if !ok {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil
	}
	if err := g.Check(netip.AddrPortFrom(ip, uint16(n))); err != nil {
		re := err.(*RefusedError)
		return &sundial.Error{Code: sundial.EInvalid, Field: "target_url", Token: u.Hostname(),
			Message: "target_url's host is the address " + re.Addr.String() + ", which the outbound guard refuses: " + re.Reason}
	}
	return nil
}

// literalIP parses host as an IP address: IPv6 (with a zone or not), or
// IPv4 as inet_aton reads it: one to four parts, each decimal, octal (a
// leading 0) or hex (0x), the last filling the bytes left.
func literalIP(host string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, digits = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" && base != 8 {
			return netip.Addr{}, false
		}
		if digits == "" {
			digits = "0"
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var n uint64
	for i, v := range vals {
		if i < len(vals)-1 {
			if v > 0xff {
				return netip.Addr{}, false
			}
			n |= v << (8 * (3 - i))
			continue
		}
		if v >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		n |= v
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// Dialer returns a dialer that checks every address it dials with g, as
// deliveries do: for what else Sundial sends to addresses its users give
// (the notifications of package alert).
func (g *Guard) Dialer() *net.Dialer {
	if g == nil {
		g = &Guard{}
	}
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, ControlContext: g.control}
}
