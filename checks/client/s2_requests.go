package client

import (
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// §2: request bodies are application/json; charset=utf-8. A runner MUST
// refuse a run or stream whose media type is not application/json (§2.3),
// and a body that is not JSON is a malformed request (§2.1), so a client
// sending either is served by no conforming runner. Judged on every run
// and stream request of every scenario.

var section2 = []*Rule{
	{ID: "2/client-json-body", Section: "2", Level: 2, Keyword: Must, Binding: Chain,
		Chain: "every conforming runner refuses a run body not labelled application/json (§2.3), or not JSON",
		Title: "a client sends run and stream a JSON object, labelled application/json",
		Probe: func(t *T) {
			var charset []string
			judged := 0
			for _, tr := range t.Env.Trials() {
				for _, q := range tr.runs() {
					judged++
					ct := q.Ex.ReqHeader.Get("Content-Type")
					if !protocol.IsJSON(ct) {
						fail(t, tr, q.Ex, "POST %s went out labelled %q: a runner refuses any media type but application/json, before reading the body (§2.3)", q.Verb, ct)
						continue
					}
					var v map[string]any
					if err := json.Unmarshal(q.Ex.ReqBody, &v); err != nil || v == nil {
						fail(t, tr, q.Ex, "POST %s carried a body that is not a JSON object (%s): a runner refuses it as a malformed request (§2.1)", q.Verb, bodyWhy(err))
						continue
					}
					if _, params, _ := mime.ParseMediaType(ct); !strings.EqualFold(params["charset"], "utf-8") && len(charset) < 1 {
						charset = append(charset, tr.Scenario.Name)
						warn(t, tr, q.Ex, "POST %s went out labelled %q, without charset=utf-8 (inferred: §2 gives request bodies as application/json; charset=utf-8, and §2.3 reads that as what a client sends; but it also says the parameters do not enter into the media type, and a runner takes either)", q.Verb, ct)
					}
				}
			}
			if judged == 0 {
				t.NotApplicable("the client sent no run or stream request in any scenario run")
			}
		}},
}

func bodyWhy(err error) string {
	if err == nil {
		return "JSON, but not an object"
	}
	return err.Error()
}

// §4.2: inputs is a map keyed by describe's input keys; a runner MUST
// refuse a request omitting a required input or failing a declared
// validation, so a client sending one is never served.

var section4_2 = []*Rule{
	{ID: "4.2/client-inputs", Section: "4.2", Level: 2, Keyword: Must, Binding: Chain,
		Chain: "a runner refuses a request omitting a required input or failing its validation (§4.2)",
		Title: "a client sends inputs keyed by describe's keys: every required one, each a value its type and validation admit",
		Probe: func(t *T) {
			judged := 0
			for _, tr := range t.Env.Trials() {
				for _, q := range tr.runs() {
					var body map[string]any
					if json.Unmarshal(q.Ex.ReqBody, &body) != nil || body == nil {
						continue // 2/client-json-body judges a body that is no JSON object
					}
					judged++
					inputs, ok := body["inputs"].(map[string]any)
					if !ok {
						fail(t, tr, q.Ex, "POST %s carried inputs as %s, not as an object keyed by describe's input keys (§4.2)", q.Verb, shape(body["inputs"]))
						continue
					}
					bad, extra := scripted.InputProblems(tr.Scenario.Script.Describe, inputs)
					for _, b := range bad {
						fail(t, tr, q.Ex, "POST %s: inputs.%s; a runner refuses that (§4.2). describe declares %s", q.Verb, b, tr.Scenario.Inputs())
					}
					if len(extra) > 0 {
						warn(t, tr, q.Ex, "POST %s carried inputs describe does not declare: %s (inferred: §4.2 keys inputs by describe's keys and says nothing of another key, which a runner may ignore)", q.Verb, strings.Join(extra, ", "))
					}
				}
			}
			if judged == 0 {
				t.NotApplicable("the client sent no run or stream request with a JSON body in any scenario run (2/client-json-body judges the bodies)")
			}
		}},
}

func shape(v any) string {
	switch v.(type) {
	case nil:
		return "nothing (absent or null)"
	case []any:
		return "an array"
	case string:
		return "a string"
	}
	return fmt.Sprintf("%T", v)
}
