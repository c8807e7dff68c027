package executor

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/sundialhq/sundial"
)

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestGuardCheck(t *testing.T) {
	t.Parallel()
	local := func() ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fd00::5")}, nil
	}
	self := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8080"), netip.MustParseAddrPort("0.0.0.0:6060")}
	tests := []struct {
		name  string
		guard *Guard
		addr  string
		want  string // "" means allowed
	}{
		{"public", nil, "93.184.215.14:443", ""},
		{"loopback", nil, "127.0.0.1:80", ""},
		{"private", nil, "10.0.0.1:80", ""},
		{"ipv6 loopback", nil, "[::1]:80", ""},
		{"unique local", nil, "[fd00::1]:80", ""},
		{"metadata", nil, "169.254.169.254:80", "link-local addresses"},
		{"link-local", nil, "169.254.0.1:80", "link-local addresses"},
		{"ipv6 link-local", nil, "[fe80::1]:80", "link-local addresses"},
		{"ipv6 link-local with a zone", nil, "[fe80::1%eth0]:80", "link-local addresses"},
		{"mapped metadata", nil, "[::ffff:169.254.169.254]:80", "link-local addresses"},
		{"unspecified", nil, "0.0.0.0:80", "unspecified addresses"},
		{"this network", nil, "0.1.2.3:80", "unspecified addresses"},
		{"ipv6 unspecified", nil, "[::]:80", "unspecified addresses"},
		{"multicast", nil, "224.0.0.1:80", "multicast addresses"},
		{"ipv6 multicast", nil, "[ff02::1]:80", "multicast addresses"},
		{"aws ipv6 metadata", nil, "[fd00:ec2::254]:80", "AWS's instance metadata service"},
		{"alibaba metadata", nil, "100.100.100.200:80", "Alibaba Cloud's instance metadata service"},
		{"azure wireserver", nil, "168.63.129.16:80", "Azure's platform service"},
		{"nat64 metadata", nil, "[64:ff9b::a9fe:a9fe]:80", "it carries 169.254.169.254 (NAT64), and link-local"},
		{"6to4 metadata", nil, "[2002:a9fe:a9fe::]:80", "it carries 169.254.169.254 (6to4)"},
		{"ipv4-compatible metadata", nil, "[::169.254.169.254]:80", "IPv4-compatible IPv6"},
		{"nat64 denied loopback", &Guard{Deny: prefixes("127.0.0.0/8")}, "[64:ff9b::7f00:1]:80", "127.0.0.0/8 is in executor.deny_networks"},
		{"6to4 denied loopback", &Guard{Deny: prefixes("127.0.0.0/8")}, "[2002:7f00:1::]:80", "deny_networks"},
		{"nat64 public", nil, "[64:ff9b::5db8:d70e]:443", ""},
		{"nat64 own listener", &Guard{Self: self}, "[64:ff9b::7f00:1]:8080", "own listener"},
		{"allow cannot open a metadata service", &Guard{Allow: prefixes("100.64.0.0/10")}, "100.100.100.200:80", "Alibaba"},
		{"zero guard", &Guard{}, "127.0.0.1:8080", ""},
		{"own listener", &Guard{Self: self}, "127.0.0.1:8080", "this node's own listener 127.0.0.1:8080"},
		{"own port elsewhere", &Guard{Self: self}, "127.0.0.2:8080", ""},
		{"own listener's address, other port", &Guard{Self: self}, "127.0.0.1:8081", ""},
		{"wildcard listener on loopback", &Guard{Self: self, LocalAddrs: local}, "127.0.0.9:6060", "own listener 0.0.0.0:6060"},
		{"wildcard listener on a local address", &Guard{Self: self, LocalAddrs: local}, "10.1.2.3:6060", "own listener"},
		{"wildcard listener on a local ipv6 address", &Guard{Self: self, LocalAddrs: local}, "[fd00::5]:6060", "own listener"},
		{"wildcard listener's port elsewhere", &Guard{Self: self, LocalAddrs: local}, "10.1.2.4:6060", ""},
		{"denied", &Guard{Deny: prefixes("10.0.0.0/8")}, "10.9.9.9:80", "10.0.0.0/8 is in executor.deny_networks"},
		{"not denied", &Guard{Deny: prefixes("10.0.0.0/8")}, "192.168.1.1:80", ""},
		{"denied mapped", &Guard{Deny: prefixes("127.0.0.0/8")}, "[::ffff:127.0.0.1]:80", "in executor.deny_networks"},
		{"allowed", &Guard{Allow: prefixes("10.0.0.0/8")}, "10.9.9.9:80", ""},
		{"not allowed", &Guard{Allow: prefixes("10.0.0.0/8")}, "127.0.0.1:80", "not in executor.allow_networks"},
		{"deny wins", &Guard{Allow: prefixes("10.0.0.0/8"), Deny: prefixes("10.1.0.0/16")}, "10.1.0.1:80", "deny_networks"},
		{"allow cannot open link-local", &Guard{Allow: prefixes("169.254.0.0/16")}, "169.254.169.254:80", "link-local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.guard.Check(netip.MustParseAddrPort(tt.addr))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check(%s) = %v, want allowed", tt.addr, err)
				}
				return
			}
			re, ok := err.(*RefusedError)
			if !ok || !strings.Contains(err.Error(), "refused by the outbound guard: ") || !strings.Contains(re.Reason, tt.want) {
				t.Fatalf("Check(%s) = %v, want refused: %q", tt.addr, err, tt.want)
			}
		})
	}
}

func TestGuardCheckURL(t *testing.T) {
	t.Parallel()
	g := &Guard{Self: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8080")}}
	tests := []struct {
		url, token string // token "" means allowed
	}{
		{"http://example.com/hook", ""},
		{"http://169.254.169.254.nip.io/", ""}, // a name: checked when dialled
		{"http://10.0.0.1:9000/hook", ""},
		{"http://127.0.0.1:8081/", ""},
		{"http://127.0.0.1:8080/api/v1/tasks", "127.0.0.1"},
		{"http://127.0.0.1/", ""},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254"},
		{"https://169.254.169.254:8443/", "169.254.169.254"},
		{"http://2852039166/", "2852039166"},
		{"http://0xa9fea9fe/", "0xa9fea9fe"},
		{"http://0251.0376.0251.0376/", "0251.0376.0251.0376"},
		{"http://169.254.43518/", "169.254.43518"},
		{"http://[fe80::1%25eth0]/", "fe80::1%eth0"},
		{"http://[::ffff:169.254.169.254]/", "::ffff:169.254.169.254"},
		{"http://0.0.0.0:9/", "0.0.0.0"},
		{"http://0/", "0"},
		{"http://[ff02::1]/", "ff02::1"},
		{"http://169.254.169.254./", "169.254.169.254."},
		{"http://169.254.169.254../", "169.254.169.254.."},
		{"http://[::ffff:0:a9fe:a9fe]/", "::ffff:0:a9fe:a9fe"},
		{"http://[fd00:ec2::254]/latest/", "fd00:ec2::254"},
		{"http://100.100.100.200/", "100.100.100.200"},
		{"http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe"},
		{"http://１６９.２５４.１６９.２５４/", "１６９.２５４.１６９.２５４"},
		{"http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/", "①⑥⑨.②⑤④.①⑥⑨.②⑤④"},
		{"http://münchen.example/", ""},
	}
	for _, tt := range tests {
		err := g.CheckURL(tt.url)
		if tt.token == "" {
			if err != nil {
				t.Errorf("CheckURL(%s) = %v, want nil", tt.url, err)
			}
			continue
		}
		e, ok := err.(*sundial.Error)
		if !ok || e.Code != sundial.EInvalid || e.Field != "target_url" || e.Token != tt.token ||
			!strings.Contains(e.Message, "which the outbound guard refuses") {
			t.Errorf("CheckURL(%s) = %#v, want invalid target_url token %q", tt.url, err, tt.token)
		}
	}
}

func TestLiteralIP(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"1.2.3.4": "1.2.3.4", "16909060": "1.2.3.4", "0x01020304": "1.2.3.4", "1.0x2.03.4": "1.2.3.4",
		"1.2.772": "1.2.3.4", "1.131844": "1.2.3.4", "0": "0.0.0.0", "00": "0.0.0.0", "::1": "::1",
		"example.com": "", "1.2.3.4.5": "", "256.1.1.1": "", "1.2.3.256": "", "4294967296": "", "0x": "",
		"": "", "1..2": "", "08": "", "a.b.c.d": "", "1.2.3.4x": "",
	} {
		ip, ok := literalIP(host)
		if got := ip.String(); ok != (want != "") || ok && got != want {
			t.Errorf("literalIP(%q) = %s, %t; want %q", host, got, ok, want)
		}
	}
}

// TestDeliverGuard: the guard is asked on the address dialled, so a
// literal, a name resolved to a refused address and a redirect hop are
// all refused, and the refused target gets nothing.
func TestDeliverGuard(t *testing.T) {
	t.Parallel()
	handler, got := recorder()
	target := httptest.NewServer(handler)
	t.Cleanup(target.Close)
	targetAddr := netip.MustParseAddrPort(target.Listener.Addr().String())
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/moved", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)

	tests := []struct {
		name  string
		guard *Guard
		url   string
		want  string
	}{
		{"metadata literal", nil, "http://169.254.169.254/latest/meta-data/",
			"dial tcp 169.254.169.254:80: address 169.254.169.254:80 refused by the outbound guard: link-local addresses"},
		{"a name resolving to a denied address", &Guard{Deny: prefixes("127.0.0.0/8", "::1/128")},
			"http://localhost:" + strconv.Itoa(int(targetAddr.Port())) + "/",
			"refused by the outbound guard: "},
		{"own listener", &Guard{Self: []netip.AddrPort{targetAddr}}, target.URL,
			"refused by the outbound guard: it is this node's own listener " + targetAddr.String()},
		{"a redirect to a refused address", &Guard{Self: []netip.AddrPort{targetAddr}}, redirect.URL,
			"refused by the outbound guard: it is this node's own listener"},
		{"not allowed", &Guard{Allow: prefixes("10.0.0.0/8")}, target.URL,
			"refused by the outbound guard: it is not in executor.allow_networks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { // not parallel: the check after the loop needs them done
			e := New(Options{Guard: tt.guard})
			t.Cleanup(e.Close)
			req := testRequest(tt.url)
			req.Redirects = sundial.RedirectAny // the redirect goes to another port: another origin
			out := e.Deliver(t.Context(), req)
			if out.Status != StatusFailed || !strings.Contains(out.Error, tt.want) {
				t.Errorf("Deliver(%s) = {%s %q}, want FAILED with %q", tt.url, out.Status, out.Error, tt.want)
			}
		})
	}
	// The same target, allowed, is reached.
	e := New(Options{Guard: &Guard{Deny: prefixes("10.0.0.0/8")}})
	t.Cleanup(e.Close)
	req := testRequest(redirect.URL)
	req.Redirects = sundial.RedirectAny
	if out := e.Deliver(t.Context(), req); out.Status != StatusSuccess {
		t.Fatalf("Deliver through the redirect = {%s %q}, want SUCCESS", out.Status, out.Error)
	}
	if r := receive(t, got); r.method != http.MethodGet {
		t.Errorf("the target got %s, want a GET: a 307 to another origin does not resend the body", r.method)
	}
	select {
	case r := <-got:
		t.Errorf("the target got a second request (%s): a refused delivery reached it", r.method)
	default:
	}
}
