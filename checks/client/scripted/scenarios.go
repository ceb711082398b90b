package scripted

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// Kind says what sort of runner a scenario puts the client in front of.
type Kind string

// The kinds of scenario.
const (
	// Plain: a conforming runner using no latitude at all.
	Plain Kind = "plain"
	// Latitude: a conforming runner using one piece of the room SPEC gives
	// it (a comment line, a lone CR, a 503 while status says ready…).
	Latitude Kind = "latitude"
	// Later: what a runner of a later minor version may send, which SPEC
	// tells a client to survive now (an error code, an output type, an
	// event name, an input type or a validation member it does not know).
	Later Kind = "later"
	// Breach: a runner in breach of a MUST that SPEC, in the same breath,
	// tells a client how to meet (deltas that disagree with done, latency_ms
	// on a started step, a member beside error, retry:, a credential value
	// in describe). A client meets such runners; §4.3, §2.1 and §7 say what
	// it then does.
	Breach Kind = "breach"
)

// Scenario is one scripted runner and what the client is asked to do
// against it.
type Scenario struct {
	Name string
	// Verb is what POSTERN_VERB asks for: run or stream.
	Verb string
	Kind Kind
	// Section states the latitude (or the receive-side rule) the scenario
	// exercises, "§4.3".
	Section string
	// What the runner does, in a line.
	What   string
	Script Script
	// Value is the text a conforming client prints as the output, where
	// the run succeeds with a text output ("" where it does not).
	Value string
	// Message is the error message of a refusal the script answers with,
	// which a client should show (§2.1); Hidden is a value no client may
	// present as text (§4.1.4); Type is the output type or media type the
	// scenario turns on.
	Message, Hidden, Type string
	// Withholds marks a scenario whose runner keeps an answer back, so a
	// client that has not finished when it is killed may have been
	// waiting on it: its hang is undecided rather than failed. None does
	// today; the mark keeps the rule in one place.
	Withholds bool
}

// The scenarios' names.
const (
	PlainRun          = "plain"
	PlainStream       = "plain-stream"
	Comments          = "comments"
	MultilineData     = "multiline-data"
	CRLF              = "crlf"
	LoneCR            = "lone-cr"
	NoSpace           = "no-space"
	UnknownField      = "unknown-field"
	IDLines           = "id-lines"
	RetryLine         = "retry-line"
	RetryDropped      = "retry-dropped"
	UnknownEvent      = "unknown-event"
	DeltasDisagree    = "deltas-disagree"
	StartedLatency    = "started-latency"
	UnknownOutputType = "unknown-output-type"
	BytesPNG          = "bytes-png"
	BytesUpperCase    = "bytes-upper-case"
	BytesUnknownMedia = "bytes-unknown-media"
	InputKeys         = "input-keys"
	UnknownInputType  = "unknown-input-type"
	UnknownValidation = "unknown-validation"
	UnknownCode4xx    = "unknown-code-4xx"
	UnknownCode5xx    = "unknown-code-5xx"
	AgentError        = "agent-error"
	ErrorSibling      = "error-sibling"
	Unavailable       = "unavailable"
	LevelTwoStream    = "level-2-stream"
	CredentialValue   = "credential-value"
)

// AgentID is the agent every scripted runner serves.
const AgentID = "conformance/scripted-agent"

// Scenarios is every scenario, plain first.
func Scenarios() []Scenario { return scenarios }

// Lookup is the scenario named name.
func Lookup(name string) (Scenario, bool) {
	i := slices.IndexFunc(scenarios, func(s Scenario) bool { return s.Name == name })
	if i < 0 {
		return Scenario{}, false
	}
	return scenarios[i], true
}

// Names lists the scenarios' names in order.
func Names() []string {
	out := make([]string, len(scenarios))
	for i, s := range scenarios {
		out[i] = s.Name
	}
	return out
}

var scenarios = build()

func build() []Scenario {
	var out []Scenario
	add := func(s Scenario) { out = append(out, s) }

	// The plain pair: the adapter works, and the client streams or not.
	add(runScenario(PlainRun, Plain, "§4.2", "a Level 3 runner, one required text input, a text output: nothing unusual",
		"A plain brief, as run answered it."))
	add(streamScenario(PlainStream, Plain, "§4.3", "the plainest stream: start, a step, two deltas, done, each event on LF-ended lines",
		"A plain brief, as the stream's done carried it.", Framing{}, nil))

	// §4.3's grammar, one latitude each.
	add(streamScenario(Comments, Latitude, "§4.3", "comment lines before the first event, between events, inside an event, and a bare \":\"",
		"A brief that kept its connection open with comments.", Framing{
			Preamble: []string{": keep-alive", ":"},
			Before:   func(i int) []string { return []string{fmt.Sprintf(": %d events so far", i)} },
			Inside:   func(int) []string { return []string{": still working"} },
		}, nil))
	add(streamScenario(MultilineData, Latitude, "§4.3", "every payload spread over several data: lines, which the format joins with a newline",
		"A brief whose payloads each spanned lines.", Framing{Multiline: true}, nil))
	add(streamScenario(CRLF, Latitude, "§4.3", "every line ended CRLF",
		"A brief written with CRLF line ends.", Framing{EOL: "\r\n"}, nil))
	add(streamScenario(LoneCR, Latitude, "§4.3", "every line ended by a lone CR",
		"A brief written with lone CR line ends.", Framing{EOL: "\r"}, nil))
	add(streamScenario(NoSpace, Latitude, "§4.3", "event:name and data:payload, without the optional space after the colon",
		"A brief written with no space after the colons.", Framing{NoSpace: true}, nil))
	add(streamScenario(UnknownField, Latitude, "§4.3", "a field the format ignores (trace:) in every event",
		"A brief whose events carried a field nobody defined.", Framing{
			Inside: func(i int) []string { return []string{fmt.Sprintf("trace: 5f2c-%d", i)} },
		}, nil))
	add(streamScenario(IDLines, Latitude, "§4.3", "an id: line in every event (a SHOULD NOT for a runner, which a client ignores)",
		"A brief whose events carried ids.", Framing{
			Inside: func(i int) []string { return []string{fmt.Sprintf("id: %d", i+1)} },
		}, nil))
	add(streamScenario(RetryLine, Breach, "§4.3", "a retry: line before the first event, which a runner MUST NOT send and a client ignores",
		"A brief whose stream asked for reconnection.", Framing{Preamble: []string{"retry: 50"}}, nil))
	s := streamScenario(RetryDropped, Breach, "§4.3", "a retry: line, then the stream drops after a delta, before done: a client that obeys retry: reopens it, which starts a new run (§4.5)",
		"", Framing{Preamble: []string{"retry: 50"}}, func(evs []Event) []Event { return evs[:3] })
	s.Script.Stream.Drop = true
	add(s)
	add(streamScenario(UnknownEvent, Later, "§4.3", "events named progress and usage-estimate between the deltas",
		"A brief streamed among events nobody defined yet.", Framing{}, func(evs []Event) []Event {
			return slices.Insert(evs, 3,
				Event{"progress", map[string]any{"fraction": 0.5}},
				Event{"usage-estimate", map[string]any{"output_tokens": 12}})
		}))
	s = streamScenario(DeltasDisagree, Breach, "§4.3", "deltas that add up to a draft, and a done whose value differs",
		"The final brief, as done carries it.", Framing{}, func(evs []Event) []Event {
			for i := range evs {
				if evs[i].Name == "delta" {
					evs[i].Data = map[string]any{"text": "Draft. "}
				}
			}
			return evs
		})
	s.Hidden = "Draft. Draft. "
	add(s)
	add(streamScenario(StartedLatency, Breach, "§4.3", "a started step carrying latency_ms, which a runner MUST NOT send and a client ignores",
		"A brief whose started step carried a latency.", Framing{}, func(evs []Event) []Event {
			evs[1].Data = map[string]any{"name": "draft", "model_id": "scripted-model", "status": "started", "latency_ms": 0}
			return evs
		}))

	// §4.1.4: outputs.
	s = runScenario(UnknownOutputType, Later, "§4.1.4", "an output of type hologram, which no client knows yet", "")
	s.Type, s.Hidden = "hologram", "HOLOGRAM-PAYLOAD-7f3a9c"
	s.Script.Describe = describeWith(func(d map[string]any) { d["output"] = map[string]any{"type": s.Type} })
	s.Script.Run = runReply(map[string]any{"type": s.Type, "value": s.Hidden})
	add(s)
	s = runScenario(BytesPNG, Plain, "§4.1.4", "a bytes output, a 1×1 PNG labelled image/png: the control of bytes-upper-case", "")
	s.Type, s.Hidden = "image/png", base64.StdEncoding.EncodeToString(onePixelPNG)
	s.Script.Describe = describeWith(func(d map[string]any) { d["output"] = map[string]any{"type": "bytes"} })
	s.Script.Run = runReply(map[string]any{"type": "bytes", "media_type": s.Type, "value": s.Hidden})
	add(s)
	s = runScenario(BytesUpperCase, Breach, "§4.1.4", "a bytes output whose media_type is IMAGE/PNG, in upper case (a runner emits it in lower case; a client compares without case)", "")
	s.Type, s.Hidden = "IMAGE/PNG", base64.StdEncoding.EncodeToString(onePixelPNG)
	s.Script.Describe = describeWith(func(d map[string]any) { d["output"] = map[string]any{"type": "bytes"} })
	s.Script.Run = runReply(map[string]any{"type": "bytes", "media_type": s.Type, "value": s.Hidden})
	add(s)
	s = runScenario(BytesUnknownMedia, Latitude, "§4.1.4", "a bytes output of a media type no client knows", "")
	s.Type, s.Hidden = "application/x-postern-scripted-artifact", base64.StdEncoding.EncodeToString([]byte("scripted artifact \x00\x01\x02 not text"))
	s.Script.Describe = describeWith(func(d map[string]any) { d["output"] = map[string]any{"type": "bytes"} })
	s.Script.Run = runReply(map[string]any{"type": "bytes", "media_type": s.Type, "value": s.Hidden})
	add(s)

	// §4.1.1: inputs.
	s = runScenario(InputKeys, Latitude, "§4.1.1", "required inputs keyed with every character the key grammar admits: Region.Code, max-words, Top_K", "A brief keyed exactly as describe keys it.")
	s.Script.Describe = describeWith(func(d map[string]any) {
		d["inputs"] = append(d["inputs"].([]any),
			map[string]any{"key": "Region.Code", "label": "Region code", "type": "text", "required": true, "default": nil},
			map[string]any{"key": "max-words", "label": "Most words", "type": "number", "required": true, "default": nil, "validation": map[string]any{"min": 10, "max": 500}},
			map[string]any{"key": "Top_K", "label": "Sources", "type": "select", "required": true, "default": nil, "validation": map[string]any{"options": []any{"3", "5"}}})
	})
	add(s)
	s = runScenario(UnknownInputType, Later, "§4.1.1", "a required input of type colour, which no client knows yet", "A brief in the colours it was given.")
	s.Type = "colour"
	s.Script.Describe = describeWith(func(d map[string]any) {
		d["inputs"] = append(d["inputs"].([]any), map[string]any{"key": "palette", "label": "Palette", "type": s.Type, "required": true, "default": nil})
	})
	add(s)
	s = runScenario(UnknownValidation, Later, "§4.1.1", "a required number input whose validation carries step, a member nobody defined yet", "A brief of the length it was asked for.")
	s.Script.Describe = describeWith(func(d map[string]any) {
		d["inputs"] = append(d["inputs"].([]any), map[string]any{"key": "pages", "label": "Pages", "type": "number", "required": true, "default": nil,
			"validation": map[string]any{"min": 2, "max": 5, "step": 1}})
	})
	add(s)

	// §2.1: refusals.
	add(refusal(UnknownCode4xx, Later, "§2.1", "run refused 429 with rate_limited, a code no client knows yet", 429, "rate_limited",
		"The scripted agent's hourly quota is spent; try again in an hour.", nil))
	add(refusal(UnknownCode5xx, Later, "§2.1", "run refused 502 with upstream_unreachable, a code no client knows yet", 502, "upstream_unreachable",
		"The scripted agent's model provider did not answer.", nil))
	add(refusal(AgentError, Plain, "§2.1", "run refused 500 agent_error, in the plain envelope", 500, "agent_error",
		"The scripted agent ran and failed while drafting.", nil))
	add(refusal(ErrorSibling, Breach, "§2.1", "run refused 500 agent_error in an envelope with a member beside error", 500, "agent_error",
		"The scripted agent ran and failed while drafting.", map[string]any{"request_id": "req-7f3a9c"}))
	add(refusal(Unavailable, Latitude, "§4.5", "status says ready, and every run is refused 503 unavailable (the slot went elsewhere)", 503, "unavailable",
		"Another run holds the scripted runner's only slot.", nil))

	// §3: the level is read from status.
	s = runScenario(LevelTwoStream, Latitude, "§3", "a Level 2 runner asked for a stream; describe still carries the withdrawn capabilities.streaming: true",
		"A brief from a runner that does not stream.")
	s.Verb = protocol.Stream
	s.Script.Level = 2
	s.Script.Status = statusWith(func(st map[string]any) { st["level"] = 2 })
	s.Script.Describe = describeWith(func(d map[string]any) {
		d["capabilities"] = map[string]any{"tools": []any{}, "write_tools": []any{}, "streaming": true}
	})
	s.Script.Stream = Reply{}
	add(s)

	// §7: a credential value in describe.
	s = runScenario(CredentialValue, Breach, "§7", "describe carries a credential's value beside its env name", "A brief the client should never have asked for.")
	s.Hidden = "sk-scripted-4f1c9e0b7a2d4c6e8f0a1b3c5d7e9f21"
	s.Script.Describe = describeWith(func(d map[string]any) {
		d["credentials"] = []any{map[string]any{"env": "SCRIPTED_API_KEY", "purpose": "Calls the scripted model.", "value": s.Hidden}}
	})
	add(s)
	return out
}

// runScenario is a plain Level 3 runner asked for run, answering value.
func runScenario(name string, kind Kind, section, what, value string) Scenario {
	return Scenario{Name: name, Verb: protocol.Run, Kind: kind, Section: section, What: what, Value: value,
		Script: Script{Level: 3, Describe: describeWith(nil), Status: statusWith(nil),
			Run:    runReply(map[string]any{"type": "text", "value": value}),
			Stream: streamReply(Framing{}, plainEvents(value))}}
}

// streamScenario is a plain Level 3 runner asked for stream, its events
// (plainEvents, then edit's changes) framed as f says.
func streamScenario(name string, kind Kind, section, what, value string, f Framing, edit func([]Event) []Event) Scenario {
	s := runScenario(name, kind, section, what, value)
	s.Verb = protocol.Stream
	evs := plainEvents(value)
	if edit != nil {
		evs = edit(evs)
	}
	s.Script.Stream = streamReply(f, evs)
	return s
}

// refusal is a runner whose run (and stream) is refused status code.
func refusal(name string, kind Kind, section, what string, status int, code, message string, beside map[string]any) Scenario {
	s := runScenario(name, kind, section, what, "")
	s.Message = message
	env := map[string]any{"error": map[string]any{"code": code, "message": message, "detail": nil}}
	for k, v := range beside {
		env[k] = v
	}
	b, _ := json.Marshal(env)
	s.Script.Run = Reply{Status: status, ContentType: protocol.JSONUTF8, Body: b}
	s.Script.Stream = s.Script.Run
	return s
}

// The run every scripted runner answers, and its stream.
const runID = "01JSCRIPTED0000000000000001"

func runBody(output map[string]any) map[string]any {
	return map[string]any{"postern": protocol.Version, "run_id": runID, "output": output,
		"usage": map[string]any{"input_tokens": 12, "output_tokens": 34}}
}

func runReply(output map[string]any) Reply {
	b, _ := json.Marshal(runBody(output))
	return Reply{Status: http.StatusOK, ContentType: protocol.JSONUTF8, Body: b}
}

func streamReply(f Framing, evs []Event) Reply {
	return Reply{Status: http.StatusOK, ContentType: protocol.EventStream, Chunks: f.Frame(evs)}
}

// plainEvents is a stream answering value: start, a step started, two
// deltas adding up to value, the step finished, done.
func plainEvents(value string) []Event {
	half := len(value) / 2
	for half > 0 && half < len(value) && value[half]&0xC0 == 0x80 {
		half--
	}
	return []Event{
		{"start", map[string]any{"run_id": runID}},
		{"step", map[string]any{"name": "draft", "model_id": "scripted-model", "status": "started"}},
		{"delta", map[string]any{"text": value[:half]}},
		{"delta", map[string]any{"text": value[half:]}},
		{"step", map[string]any{"name": "draft", "model_id": "scripted-model", "status": "finished", "latency_ms": 12}},
		{"done", runBody(map[string]any{"type": "text", "value": value})},
	}
}

// describeWith is the scripted agent's describe, edit's changes applied.
func describeWith(edit func(d map[string]any)) []byte {
	d := map[string]any{
		"postern": protocol.Version,
		"agent": map[string]any{"id": AgentID, "name": "Scripted agent", "version": "1.0.0",
			"summary": "The client check's own agent: it answers as its scenario says."},
		"inputs": []any{
			map[string]any{"key": "prompt", "label": "Brief", "type": "text", "required": true, "default": nil,
				"validation": map[string]any{"max_length": 200}},
			map[string]any{"key": "tone", "label": "Tone", "type": "select", "required": false, "default": "plain",
				"validation": map[string]any{"options": []any{"plain", "formal"}}},
		},
		"output":       map[string]any{"type": "text", "example": "A brief."},
		"capabilities": map[string]any{"tools": []any{}, "write_tools": []any{}},
		"credentials":  []any{},
	}
	if edit != nil {
		edit(d)
	}
	b, _ := json.Marshal(d)
	return b
}

// statusWith is the scripted runner's status, edit's changes applied.
func statusWith(edit func(s map[string]any)) []byte {
	s := map[string]any{
		"postern":     protocol.Version,
		"level":       3,
		"state":       "ready",
		"agent":       map[string]any{"id": AgentID, "version": "1.0.0"},
		"entitlement": map[string]any{"state": "not_required"},
		"credentials": map[string]any{"satisfied": true, "missing": []any{}},
	}
	if edit != nil {
		edit(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// onePixelPNG is a 1×1 transparent PNG.
var onePixelPNG = func() []byte {
	b, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
	return b
}()

// Inputs are the keys of the inputs a scenario's describe declares, for a
// message.
func (s Scenario) Inputs() string {
	ins, _ := inputsOf(s.Script.Describe)
	var keys []string
	for _, in := range ins {
		keys = append(keys, in.Key)
	}
	return strings.Join(keys, ", ")
}
