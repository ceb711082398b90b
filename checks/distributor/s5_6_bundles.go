package distributor

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// okBundle is the buyer's bundle where it came 200, whole (and, with
// archive, with a readable manifest); otherwise the rule is skipped:
// undecided where no whole answer came or the archive is larger than the
// checker reads, not applicable where another rule judges what came
// (5.6/bundle-media-type a bundle that is not 200, 6/plugin-json-root one
// that cannot be read).
func okBundle(t *T, archive bool) bundleOf {
	b := buyerBundle.Of(t)
	switch {
	case !engine.Whole(b.ex):
		t.Undecided("the buyer's bundle of --agent brought no whole answer (%s): nothing to judge", b.ex.Brief())
	case b.ex.Status != http.StatusOK:
		t.NotApplicable("the buyer's bundle of --agent answered %s, not 200 (5.6/bundle-media-type judges that)", b.ex.Brief())
	case archive && b.ex.Truncated:
		t.Undecided("%s, so its manifest cannot be read", b.why)
	case archive && b.manifest == nil:
		t.NotApplicable("the bundle's manifest cannot be read: %s (6/plugin-json-root judges that)", b.why)
	}
	return b
}

// reprDigest is the bundle's Repr-Digest, its field lines joined as RFC
// 9110 §5.3 combines them.
func reprDigest(ex *wire.Exchange) string {
	return strings.Join(ex.Header.Values("Repr-Digest"), ", ")
}

// withdrawnBundle is the buyer's bundle of --withdrawn-agent, asked
// whatever its check answers: a distributor may serve it through a tail
// (§8), or answer 410 from the withdrawal on while the check stays active
// with the date access ends (§5.3: a runner with its bundle on disk never
// asks again), and either way the check says what the bundle must be.
var withdrawnBundle = &engine.Fact[*Env, *wire.Exchange]{Name: "the buyer's bundle of --withdrawn-agent",
	Compute: func(t *T) (*wire.Exchange, string) {
		return t.Do(get(protocol.BundlesRoute, t.Env.Withdrawn, bearer(t.Env.Token), "the test buyer's bundle of a withdrawn agent")), ""
	}}

// withdrawal is what the buyer is told of --withdrawn-agent: its check,
// the state and date that check gave, and its bundle.
type withdrawal struct {
	check, bundle *wire.Exchange
	state         string // active, revoked, "404" for a 404, or "" for anything else
	ends          string // the check's access_ends_at, where it gave one
}

// withdrawnOf reads the withdrawal; a rule that needs an answer that did
// not come whole is left undecided.
func withdrawnOf(t *T) withdrawal {
	w := withdrawal{check: roleChecks.Of(t)[t.Env.Withdrawn], bundle: withdrawnBundle.Of(t)}
	for _, ex := range []*wire.Exchange{w.check, w.bundle} {
		if !engine.Whole(ex) {
			t.Undecided("%s brought no whole answer (%s)", ex.Note, ex.Brief())
		}
	}
	if obj, _ := answerOf(w.check); obj != nil {
		w.state, _ = obj["state"].(string)
		w.ends, _ = obj["access_ends_at"].(string)
	} else if w.check.Status == http.StatusNotFound {
		w.state = "404"
	}
	return w
}

// gone is a 410's access_ends_at, and whether it is an RFC 3339 stamp.
func gone(ex *wire.Exchange) (string, time.Time, bool) {
	d, _ := ex.ErrorDetail().(map[string]any)
	s, _ := d["access_ends_at"].(string)
	at, ok := protocol.ParseStamp(s)
	return s, at, ok
}

// reverseDomain is a namespace like org.example or com.example.market.
var reverseDomain = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$`)

// distributorData are root members of a manifest that read as a
// distributor's data rather than the plugin's own.
var distributorData = []string{"agent_id", "listing_url", "listing", "entitlement", "entitlement_id", "catalogue", "catalog", "catalogue_url", "verification", "buyer", "purchase", "license_key", "token"}

var section5_6 = []*Rule{
	{
		ID: "5.6/bundle-media-type", Section: "5.6", Level: 1, Keyword: Must, Binding: Chain, Chain: "§5.6's 200 for an entitled buyer",
		Title:    "the entitled buyer's bundle answers 200 application/zip",
		Requires: deps(buyerBundle),
		Probe: func(t *T) {
			b := buyerBundle.Of(t)
			ex := b.ex
			switch {
			case len(b.resets) > 0:
				t.Fail(ex, "the bundle of --agent, which the buyer is entitled to, was closed or reset before a whole answer twice in a row, while the check of --agent asked right after was answered %s: §5.6 serves the bundle 200",
					b.resets[2].Brief())
			case !engine.Whole(ex):
				t.Undecided("the bundle of --agent brought no whole answer (%s): whether it is served is not decided", ex.Brief())
			case ex.Status != http.StatusOK:
				t.Fail(ex, "the bundle of --agent, which the buyer is entitled to, answered %s: §5.6 serves it 200", ex.Brief())
			case ex.MediaType() != "application/zip":
				t.Fail(ex, "the bundle is labelled %q: §5.6 serves it as application/zip", ex.Header.Get("Content-Type"))
			}
		},
	},
	{
		ID: "5.6/repr-digest", Section: "5.6", Level: 1, Keyword: Should,
		Title:    "the bundle carries Repr-Digest, with a sha-256 or sha-512 member",
		Requires: deps(buyerBundle),
		Probe: func(t *T) {
			b := okBundle(t, false)
			v := reprDigest(b.ex)
			if v == "" {
				if d := b.ex.Header.Get("Digest"); d != "" {
					t.Fail(b.ex, "the bundle carries RFC 3230's Digest (%q), which RFC 9530 obsoletes, and no Repr-Digest (§5.6)", d)
					return
				}
				t.Fail(b.ex, "the bundle carries no Repr-Digest (§5.6 asks for one, so a client can verify what it keeps)")
				return
			}
			members, ok := protocol.ParseReprDigest(v)
			if !ok {
				t.NotApplicable("Repr-Digest %q is not a structured field (5.6/repr-digest-matches judges that)", v)
			}
			if members["sha-256"] == nil && members["sha-512"] == nil {
				t.Fail(b.ex, "Repr-Digest %q has neither sha-256 (§5.6's own example) nor sha-512, the algorithms RFC 9530 registers as active: a client has no digest it can rely on", v)
			}
		},
	},
	{
		ID: "5.6/repr-digest-matches", Section: "5.6", Level: 1, Keyword: Must, Binding: Contract, Chain: "§5.6",
		Title:    "a Repr-Digest the bundle carries is a structured field, and its digests are those of the body",
		Requires: deps(buyerBundle),
		Probe: func(t *T) {
			b := okBundle(t, false)
			v := reprDigest(b.ex)
			if v == "" {
				t.NotApplicable("the bundle carries no Repr-Digest (5.6/repr-digest judges that)")
			}
			members, ok := protocol.ParseReprDigest(v)
			if !ok {
				t.Fail(b.ex, "Repr-Digest %q is not a structured-field dictionary of byte sequences (sha-256=:base64:): §5.6 names RFC 9530's field, whose colons are syntax", v)
				return
			}
			if b.ex.Truncated {
				t.Undecided("the bundle is larger than the checker reads, so its digest cannot be computed")
			}
			judged := 0
			for _, alg := range []string{"sha-256", "sha-512"} {
				sum, want := members[alg], protocol.DigestOf(alg, b.ex.Body)
				if sum == nil {
					continue
				}
				judged++
				if !bytes.Equal(sum, want) {
					t.Fail(b.ex, "Repr-Digest's %s is %s, but the body's is %s: §5.6 names RFC 9530's field, which is the digest of the representation, and this is not the digest of this bundle",
						alg, base64.StdEncoding.EncodeToString(sum), base64.StdEncoding.EncodeToString(want))
				}
			}
			if judged == 0 {
				t.NotApplicable("Repr-Digest %q carries no sha-256 or sha-512 member, the only ones the checker computes (5.6/repr-digest judges that)", v)
			}
		},
	},
	{
		ID: "5.6/withdrawn-410", Section: "5.6", Level: 1, Keyword: Must, Binding: Chain, Chain: "§5.6's status for a withdrawal",
		Title: "once a withdrawn agent's check says its access ended (revoked, or 404), its bundle answers the buyer 410 withdrawn, never 200 or 404; any 410 carries code withdrawn",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(roleChecks, withdrawnBundle),
		Probe: func(t *T) {
			w := withdrawnOf(t)
			ex := w.bundle
			switch {
			case ex.Status == http.StatusGone && ex.ErrorCode() != "withdrawn":
				t.Fail(ex, "the bundle of --withdrawn-agent answered %s: §5.6's 410 is the one with code withdrawn", ex.Brief())
			case ex.Status == http.StatusGone && w.state == protocol.StateActive:
				t.Note("the check of --withdrawn-agent answers active while its bundle is already 410: access runs on for what the buyer has on disk (§5.3), which SPEC admits")
			case ex.Status == http.StatusGone:
			case w.state == protocol.StateActive:
				t.NotApplicable("the check of --withdrawn-agent answers active and its bundle %s: its access has not ended, and §8's tail serves the bundle through it (5.6/withdrawn-tail-not-404 judges a 404)", ex.Brief())
			case w.state == protocol.StateRevoked || w.state == "404":
				t.Fail(ex, "the bundle of --withdrawn-agent answered %s while its check answers %s%s: once access has ended, §5.6 answers a buyer who was entitled, for an agent since withdrawn, 410 withdrawn", ex.Brief(), w.state, dated(w.ends))
			default:
				t.SkipFor(w.check, "the check of --withdrawn-agent answered %s: what its bundle should be is not known", w.check.Brief())
			}
		},
	},
	{
		ID: "5.6/withdrawn-date", Section: "5.6", Level: 1, Keyword: Should,
		Title: "a 410 for a withdrawn agent carries the end of access as error.detail.access_ends_at, an RFC 3339 timestamp",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(roleChecks, withdrawnBundle),
		Probe: func(t *T) {
			ex := withdrawnOf(t).bundle
			if !ex.Is(http.StatusGone, "withdrawn") {
				t.SkipFor(ex, "the bundle of --withdrawn-agent answered %s, no 410 withdrawn (5.6/withdrawn-410 judges that)", ex.Brief())
			}
			if s, _, ok := gone(ex); !ok {
				d, _ := ex.ErrorDetail().(map[string]any)
				t.Fail(ex, "the 410 carries no RFC 3339 error.detail.access_ends_at (it has %s): §5.6 asks for the date, so a client can say something true", shown(d["access_ends_at"], s != "" || d["access_ends_at"] != nil))
			}
		},
	},
	{
		ID: "5.6/withdrawn-same-date", Section: "5.6", Level: 1, Keyword: Must, Binding: Chain, Chain: "one date, one fact",
		Title: "where the check (active or revoked) and the 410 both give access_ends_at, they give the same instant",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(roleChecks, withdrawnBundle),
		Probe: func(t *T) {
			w := withdrawnOf(t)
			s, at, ok1 := gone(w.bundle)
			said, ok2 := protocol.ParseStamp(w.ends)
			if !w.bundle.Is(http.StatusGone, "withdrawn") || !ok1 || !ok2 {
				t.NotApplicable("the check and a 410 do not both carry an access_ends_at to compare (the check answered %s, the bundle %s)", w.check.Brief(), w.bundle.Brief())
			}
			if !at.Equal(said) {
				t.Fail(w.bundle, "the 410 gives access_ends_at %s where the check (%s) gives %s: §5.6 says where both carry one, they are the same date", s, w.state, w.ends)
			}
		},
	},
	{
		ID: "5.6/withdrawn-tail-not-404", Section: "5.6", Level: 1, Keyword: Must, Binding: Chain, Chain: "active is entitled, and §5.6's 404 is not entitled",
		Title: "while a withdrawn agent's check answers active, its bundle answers the buyer 200 or 410, never 404: entitled and no such agent cannot both be true",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(roleChecks, withdrawnBundle),
		Probe: func(t *T) {
			w := withdrawnOf(t)
			if w.state != protocol.StateActive {
				t.NotApplicable("the check of --withdrawn-agent answers %s, not active: its access has ended (5.6/withdrawn-410 judges the bundle)", w.check.Brief())
			}
			if w.bundle.Status == http.StatusNotFound {
				t.Fail(w.bundle, "the bundle of --withdrawn-agent answered %s while its check answers active%s: §5.6's 404 says not entitled, the check says entitled, and the buyer is told both (§8's tail serves the bundle; a distributor ending it early answers 410 withdrawn)",
					w.bundle.Brief(), dated(w.ends))
			}
		},
	},
}

// dated is " (access_ends_at <date>)" for a check that gave one.
func dated(ends string) string {
	if ends == "" {
		return ""
	}
	return " (access_ends_at " + ends + ")"
}

// §6 Packaging, read from the buyer's bundle.
var section6 = []*Rule{
	{
		ID: "6/plugin-json-root", Section: "6", Level: 1, Keyword: Must,
		Title:    "the bundle is a zip archive with a JSON plugin.json at its root",
		Requires: deps(buyerBundle),
		Probe: func(t *T) {
			b := okBundle(t, false)
			if b.ex.Truncated {
				t.Undecided("%s, so it cannot be read", b.why)
			}
			if b.manifest == nil {
				t.Fail(b.ex, "the bundle is not a valid Agent Plugins plugin: %s (§6)", b.why)
			}
		},
	},
	{
		ID: "6/plugin-schema", Section: "6", Level: 1, Keyword: Must,
		Title:    "plugin.json carries the Agent Plugins 1.0.0 $schema",
		Requires: deps(buyerBundle),
		Probe: func(t *T) {
			b := okBundle(t, true)
			if got := b.manifest["$schema"]; got != protocol.PluginSchema {
				t.Fail(b.ex, "plugin.json's $schema is %v, not %s (§6)", shown(got, got != nil), protocol.PluginSchema)
			}
		},
	},
	{
		ID: "6/extensions-namespace", Section: "6", Level: 1, Keyword: Must,
		Title:    "distributor data rides extensions, under reverse-domain namespaces",
		Requires: deps(buyerBundle),
		Probe: func(t *T) {
			b := okBundle(t, true)
			ext, _ := b.manifest["extensions"].(map[string]any)
			for k := range ext {
				if !reverseDomain.MatchString(k) {
					t.Fail(b.ex, "plugin.json's extensions has a namespace %q, which is no reverse-domain name (§6)", k)
				}
			}
			for _, k := range distributorData {
				if _, ok := b.manifest[k]; ok && !slices.Contains([]string{"name", "version"}, k) {
					t.Warn(b.ex, "plugin.json has %q at its root, which reads as a distributor's data: §6 puts that under extensions (inferred: the checker guesses from the name)", k)
				}
			}
		},
	},
}

func str(v any) string { s, _ := v.(string); return s }
