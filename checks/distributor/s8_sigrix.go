package distributor

import (
	"encoding/base64"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §8 The Sigrix profile, with --profile sigrix: normative for Sigrix, so
// each of its statements binds a target that claims the profile.

const sigrixChain = "§8 binds Sigrix, which --profile claims"

var section8 = []*Rule{
	{
		ID: "8/version-answer", Section: "8", Level: 1, Keyword: Must, Binding: Chain, Chain: sigrixChain,
		Title: "the version answer reads no token: 200 without one, with postern, agent_id echoed and version",
		Needs: []engine.Need[*Env]{needSigrix},
		Probe: func(t *T) {
			bare := t.Do(get(protocol.VersionsRoute, t.Env.Agent, "", "§8's version answer, without a token"))
			obj, err := answerOf(bare)
			if err != nil {
				t.Fail(bare, "the version answer of --agent without a token %s: §8 serves it reading no bearer token", err)
				return
			}
			if obj["postern"] != protocol.Version || obj["agent_id"] != t.Env.Agent {
				t.Fail(bare, "the version answer carries postern %v and agent_id %v: §8's payload carries postern %q and the identifier asked about", obj["postern"], obj["agent_id"], protocol.Version)
			}
			if _, ok := obj["version"].(string); !ok {
				t.Fail(bare, "the version answer's version is %v, not a string (§8, version.schema.json)", shown(obj["version"], obj["version"] != nil))
			}
		},
	},
	{
		ID: "8/declared-bounds", Section: "8", Level: 1, Keyword: Must, Binding: Chain, Chain: sigrixChain,
		Title:    "the check declares stale_after_seconds 60 and grace_seconds 86400",
		Needs:    []engine.Need[*Env]{needSigrix},
		Requires: deps(buyerCheck),
		Probe: func(t *T) {
			ex := buyerCheck.Of(t)
			obj, _ := answerOf(ex)
			stale, _ := wire.Number(obj["stale_after_seconds"])
			grace, _ := wire.Number(obj["grace_seconds"])
			if stale != protocol.SigrixStaleSeconds || grace != protocol.SigrixGraceSeconds {
				t.Fail(ex, "the check declares stale_after_seconds %v and grace_seconds %v: §8 fixes them at %d and %d", obj["stale_after_seconds"], obj["grace_seconds"], protocol.SigrixStaleSeconds, protocol.SigrixGraceSeconds)
			}
		},
	},
	{
		ID: "8/namespace", Section: "8", Level: 1, Keyword: Must, Binding: Chain, Chain: sigrixChain,
		Title:    "the bundle's extensions carry org.sigrix, with agent_id and listing_url",
		Needs:    []engine.Need[*Env]{needSigrix},
		Requires: deps(buyerBundle),
		Probe: func(t *T) {
			b := okBundle(t, true)
			ext, _ := b.manifest["extensions"].(map[string]any)
			ns, _ := ext[protocol.SigrixNamespace].(map[string]any)
			if ns == nil || ns["agent_id"] != t.Env.Agent || str(ns["listing_url"]) == "" {
				t.Fail(b.ex, "plugin.json's extensions has no %s namespace carrying agent_id %q and a listing_url (it has %v): §8", protocol.SigrixNamespace, t.Env.Agent, keys(ext))
			}
		},
	},
	{
		ID: "8/token-shape", Section: "8", Level: 1, Keyword: Must, Binding: Chain, Chain: sigrixChain,
		Title: "tokens are 32 random bytes in URL-safe base64",
		Needs: []engine.Need[*Env]{needSigrix},
		Probe: func(t *T) {
			for _, tk := range t.Env.tokensGiven() {
				b, err := base64.RawURLEncoding.DecodeString(tk[1])
				if err != nil {
					b, err = base64.URLEncoding.DecodeString(tk[1])
				}
				if err != nil || len(b) != protocol.SigrixTokenBytes {
					t.Fail(nil, "%s is not %d bytes of URL-safe base64 (%d characters): §8", tk[0], protocol.SigrixTokenBytes, len(tk[1]))
				}
			}
		},
	},
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
