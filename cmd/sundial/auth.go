package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/sundialhq/sundial"
	"github.com/sundialhq/sundial/api"
)

// apiAuth decides who may use the API that listens on addr
// (docs/security.md, "Who may do what"). Authentication is required
// unless the API listens on a loopback address only and auth.required is
// not set. A node that would require it and could authenticate no one (no
// bootstrap token, no token in the database) refuses to start, saying how
// to set a bootstrap token. When the API listens on loopback, it answers
// only requests whose Host is a loopback name with its port (and those of
// api.allowed_hosts), so that a web page cannot reach it by DNS
// rebinding.
func apiAuth(ctx context.Context, cfg *config, addr net.Addr, store sundial.Store, log *slog.Logger) (*api.Auth, error) {
	a := &api.Auth{
		Bootstrap: cfg.Auth.BootstrapToken,
		RateLimit: float64(cfg.Auth.RateLimit),
		RateBurst: cfg.Auth.RateBurst,
		Hosts:     append([]string(nil), cfg.API.AllowedHosts...),
	}
	loopback := isLoopback(addr)
	a.Hosts = append(a.Hosts, loopbackHosts(addr)...)
	a.Required = cfg.Auth.Required || !loopback
	if !a.Required {
		log.Warn("authentication is off: the API listens on loopback only, and anyone who can connect to it may do anything; set auth.required to require API tokens",
			"addr", addr.String())
		return a, nil
	}
	if a.Bootstrap == "" {
		usable, err := anyUsableToken(ctx, store)
		if err != nil {
			return nil, err
		}
		if !usable {
			why := "auth.required is set"
			if !loopback {
				why = "the API listens on " + addr.String() + ", which is not a loopback address"
			}
			return nil, usageErrorf("authentication is required (%s), and no one could authenticate: "+
				"the database holds no API token and auth.bootstrap_token is not set. Set a bootstrap token, an admin "+
				"token while it is set, to create the first tokens: SUNDIAL_AUTH_BOOTSTRAP_TOKEN=$(openssl rand -hex 32) "+
				"in the environment (or auth.bootstrap_token in the config file, or --auth.bootstrap_token)", why)
		}
	}
	log.Info("authentication is required: every API request but /healthz, /readyz and the callbacks needs a bearer token",
		"addr", addr.String(), "bootstrap_token", a.Bootstrap != "")
	return a, nil
}

// isLoopback reports whether addr is a loopback address.
func isLoopback(addr net.Addr) bool {
	ap, err := netip.ParseAddrPort(addr.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// loopbackHosts are the Host values of a listener on the loopback address
// addr (localhost, 127.0.0.1 and [::1] with its port), or none when addr
// is not a loopback address.
func loopbackHosts(addr net.Addr) []string {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return nil
	}
	port := strconv.Itoa(int(ap.Port()))
	return []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}
}

// anyUsableToken reports whether the database holds a token that has not
// expired.
func anyUsableToken(ctx context.Context, store sundial.Store) (bool, error) {
	ts, err := store.TokenList(ctx)
	if err != nil {
		return false, fmt.Errorf("read API tokens: %w", err)
	}
	now := time.Now()
	for _, t := range ts {
		if !t.Expired(now) {
			return true, nil
		}
	}
	return false, nil
}
