package distributor

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// The probes several sections share, as facts: each is sent once a run
// and cited by every rule that reads it.

// buyerCheck is the test buyer's check of Agent, made before the run.
var buyerCheck = &engine.Fact[*Env, *wire.Exchange]{Name: "the buyer's check of --agent", Compute: func(t *T) (*wire.Exchange, string) {
	t.Cite(t.Env.pre)
	return t.Env.pre, ""
}}

// roleChecks are the buyer's checks of the other agents given.
var roleChecks = &engine.Fact[*Env, map[string]*wire.Exchange]{Name: "the buyer's checks of the agents given", Compute: func(t *T) (map[string]*wire.Exchange, string) {
	out := map[string]*wire.Exchange{}
	for _, id := range []string{t.Env.Revoked, t.Env.Withdrawn} {
		if id != "" {
			out[id] = t.Do(t.Env.checkRequest(id, bearer(t.Env.Token), "the test buyer's check of an agent given"))
		}
	}
	return out, ""
}}

// bundleOf is one fetched bundle, read as §6 describes it.
type bundleOf struct {
	ex       *wire.Exchange
	zip      *zip.Reader
	manifest map[string]any
	raw      []byte // plugin.json as stored
	why      string // why the archive could not be read, or ""
	// resets, where the bundle's connection was closed or reset twice
	// while a check asked right after was answered, are those two
	// exchanges and the check: the route alone refuses to serve.
	resets []*wire.Exchange
}

// maxManifest caps what is read of plugin.json: a compressed entry can
// claim any size.
const maxManifest = 1 << 20

// readBundle reads a 200 bundle's archive and its root plugin.json.
func readBundle(ex *wire.Exchange) bundleOf {
	b := bundleOf{ex: ex}
	switch {
	case !engine.Whole(ex):
		b.why = "no whole answer came"
		return b
	case ex.Truncated:
		b.why = fmt.Sprintf("the bundle is larger than the checker reads (%d bytes)", ex.Cap)
		return b
	}
	z, err := zip.NewReader(bytes.NewReader(ex.Body), int64(len(ex.Body)))
	if err != nil {
		b.why = "the body is not a zip archive: " + err.Error()
		return b
	}
	b.zip = z
	for _, f := range z.File {
		if f.Name != "plugin.json" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			b.why = "plugin.json cannot be read: " + err.Error()
			return b
		}
		b.raw, err = io.ReadAll(io.LimitReader(rc, maxManifest))
		rc.Close()
		if err != nil {
			b.why = "plugin.json cannot be read: " + err.Error()
			return b
		}
		if err := json.Unmarshal(b.raw, &b.manifest); err != nil || b.manifest == nil {
			b.why = "plugin.json is not a JSON object"
		}
		return b
	}
	var names []string
	for _, f := range z.File {
		names = append(names, f.Name)
		if len(names) == 5 {
			break
		}
	}
	b.why = fmt.Sprintf("the archive has no plugin.json at its root (its first entries: %s)", strings.Join(names, ", "))
	return b
}

// entries is every file of the archive, each read under the cap (for the
// token search).
func (b bundleOf) entries() [][]byte {
	if b.zip == nil {
		return nil
	}
	var out [][]byte
	for _, f := range b.zip.File {
		if len(out) == 64 {
			break
		}
		rc, err := f.Open()
		if err != nil {
			continue
		}
		data, _ := io.ReadAll(io.LimitReader(rc, maxManifest))
		rc.Close()
		out = append(out, data)
	}
	return out
}

// buyerBundle is the test buyer's bundle of Agent. A bundle whose
// connection is closed or reset before a whole answer is asked for once
// more; where that is reset too, a check of --agent is sent, to see
// whether the distributor is answering at all (bundleOf.resets).
var buyerBundle = &engine.Fact[*Env, bundleOf]{Name: "the buyer's bundle of --agent", Compute: func(t *T) (bundleOf, string) {
	req := get(protocol.BundlesRoute, t.Env.Agent, bearer(t.Env.Token), "the test buyer's bundle of --agent")
	ex := t.Do(req)
	if engine.Whole(ex) || !errors.Is(ex.Err, wire.ErrReset) {
		return readBundle(ex), ""
	}
	req.Note = "the test buyer's bundle of --agent, again: is the reset repeated?"
	again := t.Do(req)
	if engine.Whole(again) || !errors.Is(again.Err, wire.ErrReset) {
		return readBundle(again), ""
	}
	b := readBundle(again)
	if chk := t.Do(t.Env.checkRequest(t.Env.Agent, bearer(t.Env.Token), "the test buyer's check of --agent, after its bundle was reset twice")); engine.Whole(chk) {
		b.resets = []*wire.Exchange{ex, again, chk}
	}
	return b, ""
}}

// undecidedBy, at the end of a probe comparing answers, leaves the rule
// undecided where it found nothing and ex, an ask it needed, brought no
// whole answer.
func undecidedBy(t *T, ex *wire.Exchange) {
	if ex != nil && !t.Failed() {
		t.Undecided("%s (%s) brought no whole answer (%s): the rule is not decided", ex.RequestLine(), ex.Note, ex.Brief())
	}
}

// unanswered is the first of exs that brought no whole answer, or nil.
func unanswered(exs []*wire.Exchange) *wire.Exchange {
	for _, ex := range exs {
		if ex != nil && !engine.Whole(ex) {
			return ex
		}
	}
	return nil
}

// answerOf is a 200 check answer's JSON object, or nil.
func answerOf(ex *wire.Exchange) (map[string]any, error) {
	if ex.Status != http.StatusOK {
		return nil, fmt.Errorf("answered %s", ex.Brief())
	}
	obj := ex.Object()
	if obj == nil {
		return nil, fmt.Errorf("the body is not a JSON object")
	}
	return obj, nil
}

// checkAnswer is one 200 check answer of the run, with what it addressed.
type checkAnswer struct {
	ex  *wire.Exchange
	obj map[string]any
	id  string // the identifier the request's path addressed
}

// checkAnswers are the run's 200 answers to checks that addressed a valid
// identifier with no query: the answers §5.3 describes.
func checkAnswers(exs []*wire.Exchange) []checkAnswer {
	var out []checkAnswer
	seen := map[*wire.Exchange]bool{}
	for _, ex := range exs {
		if seen[ex] || ex.Status != http.StatusOK || ex.Method != http.MethodGet {
			continue
		}
		seen[ex] = true
		u, err := url.Parse(ex.URL)
		if err != nil || u.RawQuery != "" {
			continue
		}
		id, a := protocol.Address(u.EscapedPath(), protocol.EntitlementsRoute)
		if a != protocol.ID {
			continue
		}
		if obj := ex.Object(); obj != nil {
			out = append(out, checkAnswer{ex: ex, obj: obj, id: id})
		}
	}
	return out
}

// rawPathOf is the path of an exchange's URL as it was sent.
func rawPathOf(ex *wire.Exchange) string {
	u, err := url.Parse(ex.URL)
	if err != nil {
		return ""
	}
	return u.EscapedPath()
}

// offset bounds the distributor's clock against ours (server − local),
// from the Date of every answer: an answer dated D was written at a
// server time in [D, D+1s), and at a local time between its request's
// sending and its arrival. Each answer narrows the interval; with none,
// ±noDate is allowed.
type offset struct{ lo, hi time.Duration }

const noDate = 5 * time.Second

func clockOffset(exs []*wire.Exchange) (offset, bool) {
	o := offset{lo: -1 << 62, hi: 1 << 62}
	any := false
	for _, ex := range exs {
		if !ex.Answered() || ex.Sent.IsZero() {
			continue
		}
		d, err := http.ParseTime(ex.Header.Get("Date"))
		if err != nil {
			continue
		}
		lo, hi := d.Sub(ex.Sent.Add(ex.Elapsed)), d.Add(time.Second).Sub(ex.Sent)
		if !any || (max(o.lo, lo) <= min(o.hi, hi)) {
			o.lo, o.hi = max(o.lo, lo), min(o.hi, hi)
		}
		if !any {
			o = offset{lo, hi}
		}
		any = true
	}
	if !any {
		return offset{-noDate, noDate}, false
	}
	return o, true
}

func (o offset) String() string {
	return fmt.Sprintf("the distributor's clock is %s to %s off ours (from its Date headers)", o.lo.Round(time.Millisecond), o.hi.Round(time.Millisecond))
}

// stampSlack is what a timestamp written to the second may hide: it reads
// as up to a second older than the instant it stands for.
func stampSlack(s string) time.Duration {
	if strings.Contains(s, ".") {
		return 10 * time.Millisecond
	}
	return time.Second
}

// volatile are the header fields that differ between any two answers, so
// §5.5's comparison leaves them aside, names and values.
var volatile = []string{"Date", "Age", "Expires", "Last-Modified", "Etag", "X-Request-Id", "X-Trace-Id", "Traceparent",
	"Tracestate", "Server-Timing", "Cf-Ray", "X-Amzn-Requestid", "X-Amzn-Trace-Id", "X-Correlation-Id", "Request-Id", "X-Cloud-Trace-Context"}

// countsOnly are the fields whose presence is compared but not their
// values: Content-Length follows the body (compared on its own, an echo of
// the question aside), and a rate limit's counters describe the caller's
// own bucket, which each token has.
var countsOnly = []string{"Content-Length", "Ratelimit", "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset", "Ratelimit-Policy",
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Retry-After"}

// likeness is how two answers are compared, learned from one request sent
// twice: whether bodies can be compared byte for byte, and which header
// fields vary by themselves (a request id, a cookie), to leave aside.
type likeness struct {
	bodies bool
	vary   map[string]bool // canonical names
}

// learn compares a with again, the same request's answer: what differs
// between them varies by itself. Without a whole second answer, nothing is
// known to vary.
func learn(a, again *wire.Exchange) likeness {
	l := likeness{bodies: true, vary: map[string]bool{}}
	if !engine.Whole(a) || !engine.Whole(again) {
		return l
	}
	l.bodies = !varies(a, again)
	l.learn(a.Header, again.Header)
	return l
}

// learn adds to l.vary every field whose values differ between a and b.
func (l likeness) learn(a, b http.Header) {
	for _, h := range []http.Header{a, b} {
		for k := range h {
			if !slices.Equal(a.Values(k), b.Values(k)) {
				l.vary[http.CanonicalHeaderKey(k)] = true
			}
		}
	}
}

// explain notes, on t, what the comparison of what's answers leaves aside.
func (l likeness) explain(t *T, what string) {
	if !l.bodies {
		t.Note("%s varies by itself from one request to the next, so bodies were not compared byte for byte", what)
	}
	if len(l.vary) > 0 {
		t.Note("%s varies by itself in %s, so those fields were left aside", what, strings.Join(slices.Sorted(maps.Keys(l.vary)), ", "))
	}
}

// headerSet is an answer's field names, the volatile ones and those that
// vary by themselves aside.
func (l likeness) headerSet(h http.Header) []string {
	var out []string
	for k := range h {
		k = http.CanonicalHeaderKey(k)
		if !slices.Contains(volatile, k) && !l.vary[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// tellApart says how a tells itself apart from b ("" where nothing does):
// status, code, the media type, the header set, body bytes (unless the
// reference answer varies by itself), and the values of the header fields
// both carry. Each body has the string its own request addressed (and its
// lower-cased and hyphenated forms, a correction computed from the string
// alone) replaced first, so an echo of the question is no difference.
// valuesOnly says the one difference is a field's value.
func (l likeness) tellApart(a, b *wire.Exchange, echoA, echoB string) (diff string, valuesOnly bool) {
	switch {
	case a.Status != b.Status:
		return fmt.Sprintf("status %d against %d", a.Status, b.Status), false
	case a.ErrorCode() != b.ErrorCode():
		return fmt.Sprintf("code %q against %q", a.ErrorCode(), b.ErrorCode()), false
	case a.Header.Get("Content-Type") != b.Header.Get("Content-Type"):
		return fmt.Sprintf("Content-Type %q against %q", a.Header.Get("Content-Type"), b.Header.Get("Content-Type")), false
	}
	ha, hb := l.headerSet(a.Header), l.headerSet(b.Header)
	if !slices.Equal(ha, hb) {
		return fmt.Sprintf("header fields %v against %v", ha, hb), false
	}
	if l.bodies {
		ba, bb := unecho(a.Body, echoA), unecho(b.Body, echoB)
		if !bytes.Equal(ba, bb) {
			return fmt.Sprintf("body %s against %s", wire.Excerpt(a.Body, 160), wire.Excerpt(b.Body, 160)), false
		}
	}
	for _, k := range ha {
		if slices.Contains(countsOnly, k) {
			continue
		}
		if va, vb := strings.Join(a.Header.Values(k), ", "), strings.Join(b.Header.Values(k), ", "); va != vb {
			return fmt.Sprintf("%s %q against %q", k, va, vb), true
		}
	}
	return "", false
}

// confirmedApart is tellApart, a difference in a field's value confirmed:
// both requests are sent again side by side, and a value that changed
// between the two sendings varies by itself (a counter, a clock rounded to
// the second), so it is no difference.
func confirmedApart(t *T, l likeness, a, b *wire.Exchange, echoA, echoB string, reqA, reqB wire.Request) string {
	d, valuesOnly := l.tellApart(a, b, echoA, echoB)
	if !valuesOnly || reqA.Path == "" || reqB.Path == "" {
		return d
	}
	reqA.Note, reqB.Note = reqA.Note+", again: does the difference hold?", reqB.Note+", again: does the difference hold?"
	reqs := []wire.Request{reqA, reqB}
	again := t.SideBySide(2, func(i int, s *engine.Session, ctx context.Context) *wire.Exchange { return s.Do(ctx, reqs[i]) })
	if !engine.Whole(again[0]) || !engine.Whole(again[1]) {
		return d
	}
	l2 := likeness{bodies: l.bodies, vary: maps.Clone(l.vary)}
	l2.learn(a.Header, again[0].Header)
	l2.learn(b.Header, again[1].Header)
	if d2, _ := l2.tellApart(again[0], again[1], echoA, echoB); d2 == "" {
		t.Note("%s differed from the reference once (%s), and not when both were asked again: taken for a value that varies by itself", a.RequestLine(), d)
		return ""
	}
	return d
}

// unecho replaces in body the string s, as a request addressed it, and
// the forms a correction computed from the string alone gives it.
func unecho(body []byte, s string) []byte {
	if s == "" {
		return body
	}
	forms := []string{s, strings.ToLower(s), strings.ReplaceAll(s, "_", "-"), strings.ReplaceAll(strings.ToLower(s), "_", "-")}
	slices.Sort(forms)
	for _, f := range slices.Compact(forms) {
		body = bytes.ReplaceAll(body, []byte(f), []byte("\x00echo\x00"))
	}
	return body
}

// varies reports whether two answers to the same request differ in body:
// then bodies cannot be compared byte for byte.
func varies(a, b *wire.Exchange) bool { return !bytes.Equal(a.Body, b.Body) }

// firstTime reports whether key is met for the first time in this probe:
// a rule judging every answer of the run reports each kind of breach once.
func firstTime() func(key string) bool {
	seen := map[string]bool{}
	return func(key string) bool {
		if seen[key] {
			return false
		}
		seen[key] = true
		return true
	}
}
