package distributor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// burst is the most bundle requests --rate-limit sends from this address
// until a refusal; the rule on both buckets sends at most as many again
// from a second one, and as many from here, with tokens no one issued.
const burst = 300

// limited reports whether an answer is a rate limit's refusal.
func limited(ex *wire.Exchange) bool {
	return ex.Status == http.StatusTooManyRequests || ex.Status == http.StatusServiceUnavailable
}

// secondSource is the address the rule on both buckets connects from: on
// Linux all of 127.0.0.0/8 is this machine, and the system connects from
// 127.0.0.1 to any of it.
var secondSource = net.IPv4(127, 0, 0, 2)

// burstOf is the burst --rate-limit sends: bundle requests of --agent with
// the buyer's token, from the address the system picks, until one is
// refused.
type burstOf struct {
	sent, unanswered int
	refused          *wire.Exchange // the first refusal, or nil
}

var bundleBurst = &engine.Fact[*Env, burstOf]{Name: "a burst of bundle requests", Compute: func(t *T) (burstOf, string) {
	return burstFrom(t, "a burst of bundle requests"), ""
}}

// burstFrom sends the burst.
func burstFrom(t *T, note string) burstOf {
	var b burstOf
	for b.sent < burst && b.refused == nil && t.Ctx.Err() == nil {
		n := min(engine.DefaultInFlight, burst-b.sent)
		exs := t.SideBySide(n, func(i int, s *engine.Session, ctx context.Context) *wire.Exchange {
			return s.Do(ctx, get(protocol.BundlesRoute, t.Env.Agent, bearer(t.Env.Token), note))
		})
		b.sent += n
		for _, ex := range exs {
			if !engine.Whole(ex) {
				b.unanswered++
			}
			if limited(ex) && b.refused == nil {
				b.refused = ex
			}
		}
	}
	return b
}

// needLoopback: a second source address is at hand only where the target
// is on IPv4 loopback (a host name is resolved by the probe).
var needLoopback = engine.Need[*Env]{Name: "a target on loopback", Check: func(e *Env) string {
	ip := net.ParseIP(e.Base.Hostname())
	switch {
	case ip == nil || ip.To4() != nil && ip.IsLoopback():
		return ""
	case ip.IsLoopback():
		return fmt.Sprintf("the target is on %s, and IPv6 has one loopback address: no second source address is at hand to tell which bucket refused", ip)
	}
	return fmt.Sprintf("the target (%s) is not on loopback: from one source address a check cannot tell which bucket refused (%s)", ip, notLoopback)
}}

// notLoopback is why a target off loopback cannot show §5.6's two buckets.
const notLoopback = "a second source address, 127.0.0.2, is this machine only where the target is too"

// Where names the rules this check decides only on some targets, and why
// no other target shows them (list --coverage says so).
func Where() map[string]string {
	return map[string]string{"5.6/rate-limit-both-buckets": "only on a distributor on loopback, with --rate-limit: " + notLoopback +
		"; off loopback it is not checked, since from one source address a check cannot tell which bucket refused"}
}

// §5.6's rate limit, with --rate-limit: a burst of bundle requests with the
// buyer's token, from this one address, then, on loopback, from a second.
// They run after every other probe (as the timed rules do), so no other
// rule meets the limit they provoke.
var sectionRateLimit = []*Rule{
	{
		ID: "5.6/rate-limited", Section: "5.6", Level: 1, Keyword: Should, Agent: true,
		Title: "bundle retrieval is rate-limited: a burst of a few hundred is refused before its end",
		Needs: []engine.Need[*Env]{needRateLimit}, Requires: deps(bundleBurst),
		Probe: func(t *T) {
			b := bundleBurst.Of(t)
			switch {
			case b.refused != nil:
				t.Note("refused after %d requests at most: %s", b.sent, b.refused.Brief())
			case b.unanswered > 0:
				t.Undecided("%d of the %d bundle requests brought no whole answer, and none was refused: whether a limit holds is not decided", b.unanswered, b.sent)
			default:
				t.Fail(nil, "%d bundle requests with one token from one address were all served: §5.6 asks for a rate limit per token and per source address", b.sent)
			}
		},
	},
	{
		ID: "5.6/rate-limit-both-buckets", Section: "5.6", Level: 1, Keyword: Should, Agent: true,
		Title: "a refused bundle request counts against both buckets, the token's and the address's (seen from a second loopback address)",
		Needs: []engine.Need[*Env]{needRateLimit, needStranger, needLoopback}, Requires: deps(bundleBurst),
		Probe: func(t *T) { bothBuckets(t, bundleBurst.Of(t)) },
	},
}

// bothBuckets judges whether a request the token's bucket refused is
// counted against the address's too. The burst came from A (the address
// the system picks), among the check's other requests; so:
//
//  1. the buyer's token is sent from B (127.0.0.2) until refused: its
//     bucket is then full (the stranger's token from B, served, shows it
//     was not B's that refused);
//  2. what A's bucket holds is bounded: by every bundle request A sent,
//     where the stranger's token from A is refused now, or else by those
//     and as many more, each with a token no one issued, as it takes to
//     be refused (the stranger's token from A, refused then, shows it was
//     A's bucket);
//  3. the buyer's token is sent from B twice as many times as A's bucket
//     holds, each refused by the token's bucket, and the stranger's token
//     from B every step: where refusals count against B's bucket, it
//     fills and the stranger is refused. A would-be WARN is asked again.
//
// From B go at most burst requests to fill the token's bucket, and four
// times what A's bucket holds (itself at most burst more) with the
// stranger's asks: at most half as many as the burst filled the token's
// with, so the stranger's own bucket never fills.
func bothBuckets(t *T, b burstOf) {
	e := t.Env
	if b.refused == nil {
		t.NotApplicable("the burst met no refusal (5.6/rate-limited judges that): there is nothing to count")
	}
	if ip := net.ParseIP(e.Base.Hostname()); ip == nil {
		addrs, err := e.Lookup(t.Ctx, e.Base.Hostname())
		if err != nil {
			t.Undecided("%s cannot be resolved: %v", e.Base.Hostname(), err)
		}
		for _, a := range addrs {
			if a.IP.To4() == nil || !a.IP.IsLoopback() {
				t.NotApplicable("%s resolves to %s, not to IPv4 loopback alone: %s", e.Base.Hostname(), a.IP, notLoopback)
			}
		}
	}
	fromA := 0
	for _, ex := range t.Session().Exchanges() {
		if ex.Method == http.MethodGet && routeOf(ex) == protocol.BundlesRoute {
			fromA++
		}
	}
	bundle := func(tok, note string) wire.Request { return get(protocol.BundlesRoute, e.Agent, bearer(tok), note) }
	send := func(from net.IP, n int, req func() wire.Request) []*wire.Exchange {
		return t.SideBySide(n, func(i int, s *engine.Session, ctx context.Context) *wire.Exchange {
			if from != nil {
				ctx = wire.FromAddress(ctx, from)
			}
			return s.Do(ctx, req())
		})
	}
	one := func(from net.IP, tok, note string) *wire.Exchange {
		ex := send(from, 1, func() wire.Request { return bundle(tok, note) })[0]
		if from != nil && errors.Is(ex.Err, syscall.EADDRNOTAVAIL) {
			t.NotApplicable("no connection could be made from %s (%s): this system does not route all of 127.0.0.0/8 to loopback", from, ex.Brief())
		}
		if !engine.Whole(ex) {
			t.Undecided("%s (%s) brought no whole answer (%s)", ex.RequestLine(), ex.Note, ex.Brief())
		}
		return ex
	}
	// 1. The token's bucket, filled from B.
	filled, refused := 0, limited(one(secondSource, e.Token, "the buyer's token from 127.0.0.2: is the token's bucket full?"))
	for filled < burst && !refused && t.Ctx.Err() == nil {
		for _, ex := range send(secondSource, engine.DefaultInFlight, func() wire.Request {
			return bundle(e.Token, "the buyer's token from 127.0.0.2, until its bucket refuses")
		}) {
			refused = refused || limited(ex)
		}
		filled += engine.DefaultInFlight
	}
	if !refused {
		t.NotApplicable("the buyer's token, refused from this address, was served %d more times from %s: no limit per token showed, so nothing shows what a refusal is counted against", filled+1, secondSource)
	}
	if ex := one(secondSource, e.Stranger, "the stranger's token from 127.0.0.2: was it that address's bucket that refused?"); limited(ex) {
		t.NotApplicable("from %s too the address's bucket refused before the token's (the stranger's token from there was refused as well, %s): the token's bucket could not be filled alone", secondSource, ex.Brief())
	}
	// 2. What A's bucket holds, at most.
	holds := fromA + 1
	if !limited(one(nil, e.Stranger, "the stranger's token from this address: is this address's bucket full?")) {
		n, full := 0, false
		for n < burst && !full && t.Ctx.Err() == nil {
			for _, ex := range send(nil, engine.DefaultInFlight, func() wire.Request {
				return bundle(mint(), "a token no one issued, from this address: how much does its bucket hold?")
			}) {
				full = full || limited(ex)
			}
			n += engine.DefaultInFlight
		}
		if !full {
			t.NotApplicable("%d more requests from this address, each with a token no one issued, were not refused: no limit per address showed (or it counts only tokens that resolve), so nothing shows what a refusal is counted against", n)
		}
		if !limited(one(nil, e.Stranger, "the stranger's token from this address: was it this address's bucket that refused?")) {
			t.NotApplicable("a token no one issued was refused from this address after %d requests, but the stranger's token from here was then served: the refusal was not this address's (a bucket the tokens no one issued share, say), so what it holds is not shown", n)
		}
		holds += n + 1
	}
	at := "at once"
	if filled > 0 {
		at = fmt.Sprintf("within %d requests", filled+1)
	}
	t.Note("the buyer's token was refused from %s %s, the stranger's served there; this address's bucket holds at most %d", secondSource, at, holds)
	// 3. Refusals from B, and whether B's bucket fills with them.
	rounds := 2*holds + 2*engine.DefaultInFlight
	probes := max(1, b.sent/4)
	step := max(2*engine.DefaultInFlight, (rounds+probes-1)/probes)
	watch := func() (refusedFromB int, shown *wire.Exchange) {
		for sent := 0; sent < rounds && t.Ctx.Err() == nil; {
			n := min(step, rounds-sent)
			for _, ex := range send(secondSource, n, func() wire.Request {
				return bundle(e.Token, "the buyer's token from 127.0.0.2, past its bucket's limit")
			}) {
				if limited(ex) {
					refusedFromB++
				}
			}
			sent += n
			if p := one(secondSource, e.Stranger, "the stranger's token from 127.0.0.2: is that address's bucket full now?"); limited(p) {
				return refusedFromB, p
			}
		}
		return refusedFromB, nil
	}
	first, shown := watch()
	if shown != nil {
		t.Note("after %d requests from %s refused by the token's bucket, the stranger's token from there was refused too (%s): the refusals counted against the address", first, secondSource, shown.Brief())
		return
	}
	second, shown := watch()
	if shown != nil {
		t.Note("the stranger's token from %s was refused only in a second round, after %d more refusals of the buyer's token (%s)", secondSource, second, shown.Brief())
		return
	}
	if first+second < 2*holds {
		t.Undecided("of %d requests with the buyer's token from %s only %d were refused: its bucket refilled about as fast as it was asked, so it is not shown what a refusal counts against", 2*rounds, secondSource, first+second)
	}
	t.Fail(nil, "%d requests with the buyer's token from %s were refused by the token's bucket, at least twice what this address's bucket holds (%d), and the stranger's token from %s was still served: the refusals were not counted against the address, where §5.6 asks that a rejected request count against both buckets",
		first+second, secondSource, holds, secondSource)
}
