package httpx

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// The client's address behind a load balancer
//
// Per-address limits (failed authentications, public bodies) count the
// client, which is the TCP peer unless that peer is a trusted proxy (a
// load balancer the deployment names in O2I_TRUSTED_PROXIES): then it is
// the right-most address of X-Forwarded-For that is not itself a trusted
// proxy. An untrusted peer's X-Forwarded-For is ignored, so a client cannot
// choose the address it is counted under.

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR
// prefixes ("10.0.0.0/8, 192.168.1.7").
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", part)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// clientAddrKey holds the request's client address in its context when
// trusted proxies are configured (requestContext); without, the TCP peer
// is the client.
type clientAddrKey struct{}

// ClientAddress is the client of a request whose TCP peer is remoteAddr
// and which carries the X-Forwarded-For values xff: the peer itself unless
// it is trusted, else the right-most forwarded address that is not.
func ClientAddress(remoteAddr string, xff []string, trusted []netip.Prefix) string {
	peer := peerHost(remoteAddr)
	if !isTrusted(peer, trusted) {
		return peer
	}
	var hops []string
	for _, v := range xff {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hops = append(hops, h)
			}
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(hops[i])
		if err != nil {
			return peer // a forged or broken header: count the proxy, never a made-up name
		}
		if !isTrusted(a.Unmap().String(), trusted) {
			return a.Unmap().String()
		}
	}
	return peer
}

func isTrusted(host string, trusted []netip.Prefix) bool {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func peerHost(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}
