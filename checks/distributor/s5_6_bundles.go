package distributor

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"regexp"
	"slices"
	"strings"

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

// withdrawnBundle is the buyer's bundle of --withdrawn-agent, where the
// agent's access has ended (its check does not answer active).
var withdrawnBundle = &engine.Fact[*Env, *wire.Exchange]{Name: "the buyer's bundle of --withdrawn-agent", Requires: deps(roleChecks),
	Compute: func(t *T) (*wire.Exchange, string) {
		chk := roleChecks.Of(t)[t.Env.Withdrawn]
		if obj, _ := answerOf(chk); obj != nil && obj["state"] == protocol.StateActive {
			return nil, "--withdrawn-agent still answers active: its access has not ended, so its bundle is still served (§8's tail)"
		}
		return t.Do(get(protocol.BundlesRoute, t.Env.Withdrawn, bearer(t.Env.Token), "the test buyer's bundle of a withdrawn agent")), ""
	}}

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
		Title: "a withdrawn agent's bundle answers 410 withdrawn to a buyer who owned it, once access has ended",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(withdrawnBundle),
		Probe: func(t *T) {
			ex := withdrawnBundle.Of(t)
			if !engine.Whole(ex) {
				t.Undecided("the bundle of --withdrawn-agent brought no whole answer (%s)", ex.Brief())
			}
			if !ex.Is(http.StatusGone, "withdrawn") {
				t.Fail(ex, "the bundle of --withdrawn-agent answered %s: §5.6 answers a buyer who was entitled, for an agent since withdrawn, 410 withdrawn", ex.Brief())
			}
		},
	},
	{
		ID: "5.6/withdrawn-date", Section: "5.6", Level: 1, Keyword: Should,
		Title: "the 410 carries the end of access as error.detail.access_ends_at, an RFC 3339 timestamp",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(withdrawnBundle),
		Probe: func(t *T) {
			ex := withdrawnBundle.Of(t)
			if !ex.Is(http.StatusGone, "withdrawn") {
				t.SkipFor(ex, "the bundle of --withdrawn-agent answered %s (5.6/withdrawn-410 judges that)", ex.Brief())
			}
			d, _ := ex.ErrorDetail().(map[string]any)
			s, _ := d["access_ends_at"].(string)
			if _, ok := protocol.ParseStamp(s); !ok {
				t.Fail(ex, "the 410 carries no RFC 3339 error.detail.access_ends_at (it has %v): §5.6 asks for the date, so a client can say something true", d["access_ends_at"])
			}
		},
	},
	{
		ID: "5.6/withdrawn-same-date", Section: "5.6", Level: 1, Keyword: Must, Binding: Chain, Chain: "one date, one fact",
		Title: "where the check and the 410 both give access_ends_at, they give the same instant",
		Needs: []engine.Need[*Env]{needWithdrawn}, Requires: deps(withdrawnBundle, roleChecks),
		Probe: func(t *T) {
			ex, chkEx := withdrawnBundle.Of(t), roleChecks.Of(t)[t.Env.Withdrawn]
			for _, e := range []*wire.Exchange{ex, chkEx} {
				if !engine.Whole(e) {
					t.Undecided("%s brought no whole answer (%s): the dates cannot be compared", e.Note, e.Brief())
				}
			}
			chk, _ := answerOf(chkEx)
			d, _ := ex.ErrorDetail().(map[string]any)
			gone, ok1 := protocol.ParseStamp(str(d["access_ends_at"]))
			said, ok2 := protocol.ParseStamp(str(chk["access_ends_at"]))
			if !ok1 || !ok2 {
				t.NotApplicable("the check and the 410 do not both carry an access_ends_at to compare")
			}
			if !gone.Equal(said) {
				t.Fail(ex, "the 410 gives access_ends_at %s where the check gives %s: §5.6 says where both carry one, they are the same date", str(d["access_ends_at"]), str(chk["access_ends_at"]))
			}
		},
	},
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
