package schemas

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// Base documents: each is valid against its schema, and the cases below
// derive from them by single edits.
const (
	describeBase = `{
  "postern": "0.1",
  "agent": {"id": "owl/field-notes", "name": "Field Notes", "version": "0.4.2"},
  "inputs": [
    {"key": "topic", "label": "Topic", "type": "text", "required": true, "default": null,
     "validation": {"max_length": 80, "pattern": "^[a-z ]+$"}},
    {"key": "tone", "label": "Tone", "type": "select", "required": false, "default": "plain",
     "validation": {"options": ["plain", "formal"]}},
    {"key": "pages", "label": "Pages", "type": "number", "required": false, "default": 2,
     "validation": {"min": 1, "max": 10}}
  ],
  "output": {"type": "text", "example": "Notes on owls."},
  "capabilities": {"tools": ["web_fetch", "notes_save"], "write_tools": ["notes_save"]},
  "credentials": [{"env": "OWL_API_TOKEN", "purpose": "Reads the archive.", "signup_url": "https://owl.example/keys"}],
  "examples": [{"inputs": {"topic": "barn owls", "pages": 1}, "output": "Barn owls hunt by ear."}]
}`
	bytesOutput = `{"type": "bytes", "media_type": "image/svg+xml"}`

	statusBase = `{
  "postern": "0.1",
  "level": 2,
  "state": "ready",
  "agent": {"id": "owl/field-notes", "version": "0.4.2"},
  "entitlement": {"state": "revoked", "checked_at": "2027-01-03T10:00:00Z", "stale_after_seconds": 30,
                  "grace_seconds": 600, "access_ends_at": "2027-02-01T00:00:00+01:00"},
  "credentials": {"satisfied": false, "missing": ["OWL_API_TOKEN"]},
  "idempotent_retry": false,
  "limits": {"max_run_seconds": 120, "max_concurrent_runs": 2, "max_output_bytes": 1048576,
             "idempotency_retention_seconds": 3600},
  "update": {"state": "update_available", "current": "0.4.2", "latest": "0.5.0"}
}`

	errorBase = `{"error": {"code": "run_timeout", "message": "The run took too long.", "detail": {"max_run_seconds": 120}}}`

	runRequestBase = `{"inputs": {"topic": "owls", "pages": 3, "tone": null, "x.y-z_1": 0.5}}`

	runResponseBase = `{"postern": "0.1", "run_id": "r-0001", "output": {"type": "text", "value": "Owls."},
  "usage": {"input_tokens": 10}}`
	bytesResponse = `{"postern": "0.1", "run_id": "r-0002",
  "output": {"type": "bytes", "media_type": "application/pdf", "value": "JVBERi0xLjQK"}}`

	entitlementBase = `{"postern": "0.1", "state": "active", "agent_id": "owl/field-notes",
  "checked_at": "2027-01-03T10:00:00.5Z", "stale_after_seconds": 45, "grace_seconds": 0}`

	versionBase = `{"postern": "0.1", "agent_id": "owl/field-notes", "version": "0.5.0"}`
)

type corpusCase struct {
	name   string
	schema string
	doc    func(t *testing.T) any
	want   []vio // nil: valid
}

func ok(name, schema string, f func(t *testing.T) any) corpusCase {
	return corpusCase{name: name, schema: schema, doc: f}
}

func bad(name, schema string, f func(t *testing.T) any, want ...vio) corpusCase {
	return corpusCase{name: name, schema: schema, doc: f, want: want}
}

func from(base string, edits ...set) func(t *testing.T) any {
	return func(t *testing.T) any { return doc(t, base, edits...) }
}

func lit(s string) func(t *testing.T) any {
	return func(t *testing.T) any { return raw(t, s) }
}

func bytesDescribe(edits ...set) func(t *testing.T) any {
	return func(t *testing.T) any {
		return doc(t, describeBase, append([]set{{"/output", raw(t, bytesOutput)}}, edits...)...)
	}
}

func bytesRun(edits ...set) func(t *testing.T) any {
	return from(bytesResponse, edits...)
}

func corpus() []corpusCase {
	long := strings.Repeat("a", 64) + "/" + strings.Repeat("b", 63) // 128
	cases := []corpusCase{
		// describe: shape
		ok("describe base", "describe", from(describeBase)),
		ok("describe open root and agent", "describe", from(describeBase, set{"/extra", 1}, set{"/agent/summary", "s"}, set{"/agent/vendor", "x"})),
		ok("describe moved capability still validates", "describe", from(describeBase, set{"/capabilities/idempotent_retry", true})),
		ok("describe without optional blocks", "describe", from(describeBase, set{"/capabilities", del}, set{"/credentials", del}, set{"/examples", del})),
		ok("describe no inputs", "describe", from(describeBase, set{"/inputs", []any{}})),
		bad("describe missing output", "describe", from(describeBase, set{"/output", del}), vio{"/output", "required"}),
		bad("describe missing inputs", "describe", from(describeBase, set{"/inputs", del}), vio{"/inputs", "required"}),
		bad("describe missing agent.name", "describe", from(describeBase, set{"/agent/name", del}), vio{"/agent/name", "required"}),
		bad("describe missing agent.version", "describe", from(describeBase, set{"/agent/version", del}), vio{"/agent/version", "required"}),
		bad("describe wrong postern", "describe", from(describeBase, set{"/postern", "0.2"}), vio{"/postern", "const"}),

		// describe: output
		ok("bytes output", "describe", bytesDescribe()),
		ok("bytes structured suffix", "describe", bytesDescribe(set{"/output/media_type", "application/vnd.api+json"})),
		ok("bytes experimental type", "describe", bytesDescribe(set{"/output/media_type", "x-custom/foo"})),
		ok("bytes all restricted chars", "describe", bytesDescribe(set{"/output/media_type", "a0!#$&-^_.+/b9!#$&-^_.+"})),
		ok("text output without example", "describe", from(describeBase, set{"/output/example", del})),
		bad("bytes missing media_type", "describe", bytesDescribe(set{"/output/media_type", del}), vio{"/output/media_type", "required"}),
		bad("bytes carrying example", "describe", bytesDescribe(set{"/output/example", "x"}), vio{"/output/example", "false"}),
		bad("media type upper case", "describe", bytesDescribe(set{"/output/media_type", "IMAGE/PNG"}), vio{"/output/media_type", "not"}),
		bad("media subtype upper case", "describe", bytesDescribe(set{"/output/media_type", "image/Png"}), vio{"/output/media_type", "not"}),
		bad("media subtype leading bang", "describe", bytesDescribe(set{"/output/media_type", "image/!png"}), vio{"/output/media_type", "pattern"}),
		bad("media type no slash", "describe", bytesDescribe(set{"/output/media_type", "image"}), vio{"/output/media_type", "pattern"}),
		bad("media type parameter", "describe", bytesDescribe(set{"/output/media_type", "text/plain; charset=utf-8"}), vio{"/output/media_type", "pattern"}),
		bad("media type trailing newline", "describe", bytesDescribe(set{"/output/media_type", "image/png\n"}), vio{"/output/media_type", "pattern"}),
		bad("media type half too long", "describe", bytesDescribe(set{"/output/media_type", "image/" + strings.Repeat("p", 128)}), vio{"/output/media_type", "pattern"}),
		bad("output type unknown", "describe", from(describeBase, set{"/output/type", "json"}), vio{"/output/type", "enum"}),
		bad("output example not string", "describe", from(describeBase, set{"/output/example", 3}), vio{"/output/example", "type"}),
		bad("output missing type", "describe", from(describeBase, set{"/output/type", del}), vio{"/output/type", "required"}),

		// describe: inputs
		bad("select without validation", "describe", from(describeBase, set{"/inputs/1/validation", del}), vio{"/inputs/1/validation", "required"}),
		bad("select without options", "describe", from(describeBase, set{"/inputs/1/validation/options", del}), vio{"/inputs/1/validation/options", "required"}),
		bad("options not strings", "describe", from(describeBase, set{"/inputs/1/validation/options", []any{"a", 1.0}}), vio{"/inputs/1/validation/options/1", "type"}),
		ok("text default string", "describe", from(describeBase, set{"/inputs/0/default", "owls"})),
		ok("number default null", "describe", from(describeBase, set{"/inputs/2/default", nil})),
		ok("select default null", "describe", from(describeBase, set{"/inputs/1/default", nil})),
		ok("default absent", "describe", from(describeBase, set{"/inputs/2/default", del})),
		bad("text default number", "describe", from(describeBase, set{"/inputs/0/default", 4.0}), vio{"/inputs/0/default", "type"}),
		bad("select default number", "describe", from(describeBase, set{"/inputs/1/default", 4.0}), vio{"/inputs/1/default", "type"}),
		bad("number default string", "describe", from(describeBase, set{"/inputs/2/default", "2"}), vio{"/inputs/2/default", "type"}),
		bad("boolean default", "describe", from(describeBase, set{"/inputs/0/default", true}), vio{"/inputs/0/default", "type"}),
		bad("boolean default on number", "describe", from(describeBase, set{"/inputs/2/default", false}), vio{"/inputs/2/default", "type"}),
		bad("input type unknown", "describe", from(describeBase, set{"/inputs/0/type", "date"}), vio{"/inputs/0/type", "enum"}),
		bad("input missing label", "describe", from(describeBase, set{"/inputs/0/label", del}), vio{"/inputs/0/label", "required"}),
		bad("input missing required", "describe", from(describeBase, set{"/inputs/0/required", del}), vio{"/inputs/0/required", "required"}),
		bad("input required not boolean", "describe", from(describeBase, set{"/inputs/0/required", "yes"}), vio{"/inputs/0/required", "type"}),
		ok("key full grammar", "describe", from(describeBase, set{"/inputs/0/key", "Aa0_.-z"})),
		ok("key single char", "describe", from(describeBase, set{"/inputs/0/key", "k"})),
		bad("key with space", "describe", from(describeBase, set{"/inputs/0/key", "a b"}), vio{"/inputs/0/key", "pattern"}),
		bad("key non-ascii", "describe", from(describeBase, set{"/inputs/0/key", "é"}), vio{"/inputs/0/key", "pattern"}),
		bad("key trailing newline", "describe", from(describeBase, set{"/inputs/0/key", "key\n"}), vio{"/inputs/0/key", "pattern"}),
		bad("key empty", "describe", from(describeBase, set{"/inputs/0/key", ""}), vio{"/inputs/0/key", "pattern"}),
		ok("validation open", "describe", from(describeBase, set{"/inputs/0/validation/step", 5.0})),
		bad("max_length negative", "describe", from(describeBase, set{"/inputs/0/validation/max_length", -1.0}), vio{"/inputs/0/validation/max_length", "minimum"}),
		bad("max_length fractional", "describe", from(describeBase, set{"/inputs/0/validation/max_length", 1.5}), vio{"/inputs/0/validation/max_length", "type"}),
		bad("min not number", "describe", from(describeBase, set{"/inputs/2/validation/min", "1"}), vio{"/inputs/2/validation/min", "type"}),
		bad("pattern not string", "describe", from(describeBase, set{"/inputs/0/validation/pattern", 1.0}), vio{"/inputs/0/validation/pattern", "type"}),
		bad("example input boolean", "describe", from(describeBase, set{"/examples/0/inputs/topic", true}), vio{"/examples/0/inputs/topic", "type"}),

		// describe: credentials and capabilities
		ok("credential env only", "describe", from(describeBase, set{"/credentials/0", map[string]any{"env": "X"}})),
		bad("credential value member", "describe", from(describeBase, set{"/credentials/0/value", "sk-123"}), vio{"/credentials/0/value", "additionalProperties"}),
		bad("credential missing env", "describe", from(describeBase, set{"/credentials/0/env", del}), vio{"/credentials/0/env", "required"}),
		bad("credential signup_url not uri", "describe", from(describeBase, set{"/credentials/0/signup_url", "keys page"}), vio{"/credentials/0/signup_url", "format"}),
		bad("tools not strings", "describe", from(describeBase, set{"/capabilities/tools", []any{1.0}}), vio{"/capabilities/tools/0", "type"}),
		ok("capabilities open", "describe", from(describeBase, set{"/capabilities/streaming", true})),

		// status
		ok("status base", "status", from(statusBase)),
		ok("status minimal", "status", lit(`{"postern":"0.1","level":1,"state":"ready","agent":{"id":"a/b"},"entitlement":{"state":"not_required"}}`)),
		ok("status unknown without check", "status", from(statusBase, set{"/entitlement", map[string]any{"state": "unknown"}})),
		ok("status unknown with check", "status", from(statusBase, set{"/entitlement/state", "unknown"})),
		ok("status active", "status", from(statusBase, set{"/entitlement/state", "active"})),
		ok("status open", "status", from(statusBase, set{"/extra", 1}, set{"/entitlement/note", "x"}, set{"/limits/other", 1}, set{"/agent/name", "n"})),
		bad("active without check", "status", from(statusBase, set{"/entitlement", map[string]any{"state": "active"}}),
			vio{"/entitlement/checked_at", "required"}, vio{"/entitlement/stale_after_seconds", "required"}),
		bad("revoked without check", "status", from(statusBase, set{"/entitlement", map[string]any{"state": "revoked"}}),
			vio{"/entitlement/checked_at", "required"}, vio{"/entitlement/stale_after_seconds", "required"}),
		bad("active without stale", "status", from(statusBase, set{"/entitlement/stale_after_seconds", del}), vio{"/entitlement/stale_after_seconds", "required"}),
		bad("entitlement state unknown value", "status", from(statusBase, set{"/entitlement/state", "expired"}), vio{"/entitlement/state", "enum"}),
		bad("checked_at not date-time", "status", from(statusBase, set{"/entitlement/checked_at", "yesterday"}), vio{"/entitlement/checked_at", "format"}),
		bad("access_ends_at not date-time", "status", from(statusBase, set{"/entitlement/access_ends_at", "2027-02-01"}), vio{"/entitlement/access_ends_at", "format"}),
		bad("stale negative", "status", from(statusBase, set{"/entitlement/stale_after_seconds", -1.0}), vio{"/entitlement/stale_after_seconds", "minimum"}),
		bad("missing entitlement", "status", from(statusBase, set{"/entitlement", del}), vio{"/entitlement", "required"}),
		bad("missing agent", "status", from(statusBase, set{"/agent", del}), vio{"/agent", "required"}),
		bad("empty agent", "status", from(statusBase, set{"/agent", map[string]any{}}), vio{"/agent/id", "required"}),
		bad("missing state", "status", from(statusBase, set{"/state", del}), vio{"/state", "required"}),
		bad("state unknown value", "status", from(statusBase, set{"/state", "busy"}), vio{"/state", "enum"}),
		ok("level 1", "status", from(statusBase, set{"/level", 1.0})),
		ok("level 3", "status", from(statusBase, set{"/level", 3.0})),
		bad("level 0", "status", from(statusBase, set{"/level", 0.0}), vio{"/level", "minimum"}),
		bad("level 4", "status", from(statusBase, set{"/level", 4.0}), vio{"/level", "maximum"}),
		bad("level fractional", "status", from(statusBase, set{"/level", 2.5}), vio{"/level", "type"}),
		bad("level string", "status", from(statusBase, set{"/level", "2"}), vio{"/level", "type"}),
		ok("max_concurrent_runs 1", "status", from(statusBase, set{"/limits/max_concurrent_runs", 1.0})),
		bad("max_concurrent_runs 0", "status", from(statusBase, set{"/limits/max_concurrent_runs", 0.0}), vio{"/limits/max_concurrent_runs", "minimum"}),
		bad("max_run_seconds fractional", "status", from(statusBase, set{"/limits/max_run_seconds", 1.5}), vio{"/limits/max_run_seconds", "type"}),
		bad("idempotent_retry not boolean", "status", from(statusBase, set{"/idempotent_retry", "yes"}), vio{"/idempotent_retry", "type"}),
		bad("credentials.satisfied not boolean", "status", from(statusBase, set{"/credentials/satisfied", "false"}), vio{"/credentials/satisfied", "type"}),
		bad("credentials.missing not strings", "status", from(statusBase, set{"/credentials/missing", []any{1.0}}), vio{"/credentials/missing/0", "type"}),
		ok("update current with latest", "status", from(statusBase, set{"/update/state", "current"}, set{"/update/latest", "0.4.2"})),
		ok("update unreachable with current", "status", from(statusBase, set{"/update", map[string]any{"state": "unreachable", "current": "0.4.2"}})),
		ok("update not_required", "status", from(statusBase, set{"/update", map[string]any{"state": "not_required"}})),
		bad("update unreachable with latest", "status", from(statusBase, set{"/update/state", "unreachable"}), vio{"/update/latest", "false"}),
		bad("update not_required with latest", "status", from(statusBase, set{"/update/state", "not_required"}), vio{"/update/latest", "false"}),
		bad("update state unknown value", "status", from(statusBase, set{"/update/state", "stale"}), vio{"/update/state", "enum"}),
		bad("update without state", "status", from(statusBase, set{"/update/state", del}), vio{"/update/state", "required"}),

		// agent identifiers (§1.5), exercised through status
		ok("id 128 chars", "status", from(statusBase, set{"/agent/id", long})),
		ok("id dots and dashes inside", "status", from(statusBase, set{"/agent/id", "a.b-c/0-9.z"})),
		ok("id single chars", "status", from(statusBase, set{"/agent/id", "a/0"})),
		bad("id 129 chars", "status", from(statusBase, set{"/agent/id", long + "b"}), vio{"/agent/id", "maxLength"}),
		bad("id uppercase", "status", from(statusBase, set{"/agent/id", "Owl/field-notes"}), vio{"/agent/id", "pattern"}),
		bad("id underscore", "status", from(statusBase, set{"/agent/id", "owl/field_notes"}), vio{"/agent/id", "pattern"}),
		bad("id leading dash", "status", from(statusBase, set{"/agent/id", "-owl/notes"}), vio{"/agent/id", "pattern"}),
		bad("id trailing dot", "status", from(statusBase, set{"/agent/id", "owl/notes."}), vio{"/agent/id", "pattern"}),
		bad("id dot part", "status", from(statusBase, set{"/agent/id", "./notes"}), vio{"/agent/id", "pattern"}),
		bad("id dotdot part", "status", from(statusBase, set{"/agent/id", "owl/.."}), vio{"/agent/id", "pattern"}),
		bad("id no slash", "status", from(statusBase, set{"/agent/id", "owl"}), vio{"/agent/id", "pattern"}),
		bad("id two slashes", "status", from(statusBase, set{"/agent/id", "owl/a/b"}), vio{"/agent/id", "pattern"}),
		bad("id trailing newline", "status", from(statusBase, set{"/agent/id", "acme/x\n"}), vio{"/agent/id", "pattern"}),
		bad("id trailing space", "status", from(statusBase, set{"/agent/id", "acme/x "}), vio{"/agent/id", "pattern"}),
		bad("id non-ascii", "status", from(statusBase, set{"/agent/id", "acmé/x"}), vio{"/agent/id", "pattern"}),
		bad("describe id uppercase", "describe", from(describeBase, set{"/agent/id", "Acme/x"}), vio{"/agent/id", "pattern"}),
		bad("describe id trailing newline", "describe", from(describeBase, set{"/agent/id", "acme/x\n"}), vio{"/agent/id", "pattern"}),
		bad("describe id 129", "describe", from(describeBase, set{"/agent/id", long + "b"}), vio{"/agent/id", "maxLength"}),

		// error
		ok("error base", "error", from(errorBase)),
		ok("error detail null", "error", from(errorBase, set{"/error/detail", nil})),
		ok("error detail string", "error", from(errorBase, set{"/error/detail", "x"})),
		ok("error detail absent", "error", from(errorBase, set{"/error/detail", del})),
		ok("error object open", "error", from(errorBase, set{"/error/hint", "retry later"})),
		ok("error detail open", "error", from(errorBase, set{"/error/detail/other", true}, set{"/error/detail/missing", []any{"A"}},
			set{"/error/detail/access_ends_at", "2027-01-01T00:00:00Z"})),
		bad("error root sibling", "error", from(errorBase, set{"/postern", "0.1"}), vio{"/postern", "additionalProperties"}),
		bad("error unknown code", "error", from(errorBase, set{"/error/code", "teapot"}), vio{"/error/code", "enum"}),
		bad("error missing code", "error", from(errorBase, set{"/error/code", del}), vio{"/error/code", "required"}),
		bad("error missing message", "error", from(errorBase, set{"/error/message", del}), vio{"/error/message", "required"}),
		bad("error message not string", "error", from(errorBase, set{"/error/message", 1.0}), vio{"/error/message", "type"}),
		bad("error missing envelope", "error", lit(`{"code":"bad_request","message":"m"}`),
			vio{"/error", "required"}, vio{"/code", "additionalProperties"}, vio{"/message", "additionalProperties"}),
		bad("error detail access_ends_at", "error", from(errorBase, set{"/error/detail/access_ends_at", "soon"}), vio{"/error/detail/access_ends_at", "format"}),
		bad("error detail missing not array", "error", from(errorBase, set{"/error/detail/missing", "A"}), vio{"/error/detail/missing", "type"}),

		// run-request
		ok("run-request base", "run-request", from(runRequestBase)),
		ok("run-request empty inputs", "run-request", lit(`{"inputs": {}}`)),
		ok("run-request open root", "run-request", from(runRequestBase, set{"/trace", "x"})),
		bad("run-request boolean value", "run-request", from(runRequestBase, set{"/inputs/flag", true}), vio{"/inputs/flag", "type"}),
		bad("run-request array value", "run-request", from(runRequestBase, set{"/inputs/list", []any{"a"}}), vio{"/inputs/list", "type"}),
		bad("run-request object value", "run-request", from(runRequestBase, set{"/inputs/obj", map[string]any{}}), vio{"/inputs/obj", "type"}),
		bad("run-request key grammar", "run-request", from(runRequestBase, set{"/inputs/a b", "x"}), vio{"/inputs/a b", "propertyNames"}),
		bad("run-request missing inputs", "run-request", lit(`{}`), vio{"/inputs", "required"}),
		bad("run-request inputs array", "run-request", lit(`{"inputs": ["x"]}`), vio{"/inputs", "type"}),

		// run-response
		ok("run-response base", "run-response", from(runResponseBase)),
		ok("run-response no usage", "run-response", from(runResponseBase, set{"/usage", del})),
		ok("run-response bytes", "run-response", bytesRun()),
		ok("run-response bytes empty value", "run-response", bytesRun(set{"/output/value", ""})),
		ok("run-response bytes one pad", "run-response", bytesRun(set{"/output/value", "YWI="})),
		ok("run-response experimental media type", "run-response", bytesRun(set{"/output/media_type", "x-custom/foo"})),
		bad("run-response bytes missing media_type", "run-response", bytesRun(set{"/output/media_type", del}), vio{"/output/media_type", "required"}),
		bad("run-response media type upper case", "run-response", bytesRun(set{"/output/media_type", "Application/PDF"}), vio{"/output/media_type", "not"}),
		bad("run-response media subtype leading bang", "run-response", bytesRun(set{"/output/media_type", "image/!x"}), vio{"/output/media_type", "pattern"}),
		bad("run-response bytes not base64", "run-response", bytesRun(set{"/output/value", "not base64!"}), vio{"/output/value", "pattern"}),
		bad("run-response bytes unpadded", "run-response", bytesRun(set{"/output/value", "YWI"}), vio{"/output/value", "pattern"}),
		bad("run-response bytes url alphabet", "run-response", bytesRun(set{"/output/value", "-_-_"}), vio{"/output/value", "pattern"}),
		bad("run-response missing run_id", "run-response", from(runResponseBase, set{"/run_id", del}), vio{"/run_id", "required"}),
		bad("run-response missing output", "run-response", from(runResponseBase, set{"/output", del}), vio{"/output", "required"}),
		bad("run-response missing value", "run-response", from(runResponseBase, set{"/output/value", del}), vio{"/output/value", "required"}),
		bad("run-response value not string", "run-response", from(runResponseBase, set{"/output/value", 1.0}), vio{"/output/value", "type"}),
		bad("run-response output type unknown", "run-response", from(runResponseBase, set{"/output/type", "html"}), vio{"/output/type", "enum"}),
		bad("run-response usage not object", "run-response", from(runResponseBase, set{"/usage", "n/a"}), vio{"/usage", "type"}),
		bad("run-response wrong postern", "run-response", from(runResponseBase, set{"/postern", 0.1}), vio{"/postern", "type"}),

		// stream-event
		ok("start", "stream-event/start", lit(`{"run_id": "r-1"}`)),
		bad("start missing run_id", "stream-event/start", lit(`{"id": "r-1"}`), vio{"/run_id", "required"}),
		ok("step started", "stream-event/step", lit(`{"name": "fetch", "status": "started", "model_id": "m-1"}`)),
		ok("step finished with latency", "stream-event/step", lit(`{"name": "fetch", "status": "finished", "latency_ms": 12.5}`)),
		bad("step started with latency", "stream-event/step", lit(`{"name": "fetch", "status": "started", "latency_ms": 0}`), vio{"/latency_ms", "false"}),
		bad("step negative latency", "stream-event/step", lit(`{"name": "fetch", "status": "finished", "latency_ms": -1}`), vio{"/latency_ms", "minimum"}),
		bad("step status unknown", "stream-event/step", lit(`{"name": "fetch", "status": "running"}`), vio{"/status", "enum"}),
		bad("step missing name and status", "stream-event/step", lit(`{}`), vio{"/name", "required"}, vio{"/status", "required"}),
		ok("delta", "stream-event/delta", lit(`{"text": ""}`)),
		bad("delta text not string", "stream-event/delta", lit(`{"text": 5}`), vio{"/text", "type"}),
		ok("any event: start", "stream-event", lit(`{"run_id": "r-1"}`)),
		ok("any event: delta", "stream-event", lit(`{"text": "x"}`)),
		bad("any event: none", "stream-event", lit(`{"other": 1}`), vio{"", "anyOf"}),

		// entitlement
		ok("entitlement base", "entitlement", from(entitlementBase)),
		ok("entitlement revoked with end date", "entitlement", from(entitlementBase, set{"/state", "revoked"}, set{"/access_ends_at", "2026-12-31T23:59:59Z"})),
		ok("entitlement open", "entitlement", from(entitlementBase, set{"/org.sigrix", map[string]any{}})),
		bad("entitlement state unknown", "entitlement", from(entitlementBase, set{"/state", "unknown"}), vio{"/state", "enum"}),
		bad("entitlement checked_at format", "entitlement", from(entitlementBase, set{"/checked_at", "yesterday"}), vio{"/checked_at", "format"}),
		bad("entitlement access_ends_at format", "entitlement", from(entitlementBase, set{"/access_ends_at", "next year"}), vio{"/access_ends_at", "format"}),
		bad("entitlement grace negative", "entitlement", from(entitlementBase, set{"/grace_seconds", -5.0}), vio{"/grace_seconds", "minimum"}),
		bad("entitlement agent_id uppercase", "entitlement", from(entitlementBase, set{"/agent_id", "Owl/field-notes"}), vio{"/agent_id", "pattern"}),

		// version
		ok("version base", "version", from(versionBase)),
		ok("version open", "version", from(versionBase, set{"/listing_url", "x"})),
		bad("version missing version", "version", from(versionBase, set{"/version", del}), vio{"/version", "required"}),
		bad("version missing agent_id", "version", from(versionBase, set{"/agent_id", del}), vio{"/agent_id", "required"}),
		bad("version agent_id newline", "version", from(versionBase, set{"/agent_id", "owl/x\n"}), vio{"/agent_id", "pattern"}),
		bad("version missing postern", "version", from(versionBase, set{"/postern", del}), vio{"/postern", "required"}),
	}
	for _, f := range []string{"postern", "state", "agent_id", "checked_at", "stale_after_seconds", "grace_seconds"} {
		cases = append(cases, bad("entitlement missing "+f, "entitlement", from(entitlementBase, set{"/" + f, del}), vio{"/" + f, "required"}))
	}
	for _, c := range []string{"bad_request", "unauthorized", "not_found", "not_entitled", "idempotency_conflict", "withdrawn",
		"missing_credential", "agent_error", "not_implemented", "unavailable", "run_timeout"} {
		cases = append(cases, ok("error code "+c, "error", from(errorBase, set{"/error/code", c})))
	}
	return cases
}

func TestCorpus(t *testing.T) {
	s, err := Embedded()
	assert.NilError(t, err)
	for _, c := range corpus() {
		t.Run(c.schema+"/"+c.name, func(t *testing.T) {
			got := s.Validate(c.schema, c.doc(t))
			if c.want == nil {
				assert.Assert(t, len(got) == 0, "want valid; got %v", got)
				return
			}
			assert.Assert(t, len(got) > 0, "want invalid")
			hasAll(t, got, c.want)
		})
	}
}
