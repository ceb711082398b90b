package checks

import (
	"bytes"
	"context"
	"fmt"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Finding is one reason a rule broke, with the exchange that shows it.
type Finding struct {
	Message string
	Ex      *wire.Exchange
	// Inferred marks a finding that rests on no bold keyword (a constraint
	// only the schema or descriptive prose states): it warns even where the
	// rule's own keyword would fail a runner.
	Inferred bool
}

// T is handed to a probe. A probe reports what it saw through Fail, Skip and
// Note; a probe that reports no finding passes.
type T struct {
	Ctx  context.Context
	Env  *Env
	Rule *Rule

	findings []Finding
	skip     string
	notes    []string
	sent     []*wire.Exchange
}

// Do sends a request and records it as evidence of this rule.
// Once several requests in a row have gone unanswered, Do stops sending and
// returns an unanswered exchange at once, so a runner that has hung costs a
// few deadlines rather than one per remaining probe.
func (t *T) Do(r wire.Request) *wire.Exchange {
	var ex *wire.Exchange
	if t.Env.gaveUp() {
		ex = &wire.Exchange{Method: r.Method, URL: t.Env.Client.Base().String() + r.Path, Note: r.Note, Err: ErrGaveUp}
	} else {
		ex = t.Env.Client.Do(t.Ctx, r)
		t.Env.countSilence(ex)
	}
	t.keep(ex)
	return ex
}

func (t *T) keep(ex *wire.Exchange) {
	t.sent = append(t.sent, ex)
	t.Env.record(ex)
}

// Cite adds to this rule's evidence an exchange sent outside the probe (by
// an Env.Prefetch computation) and already recorded in the run's log there.
func (t *T) Cite(ex *wire.Exchange) { t.sent = append(t.sent, ex) }

// Withheld sends the head of a POST and withholds its body (see wire).
func (t *T) Withheld(path string, h map[string][]string, note string) *wire.Exchange {
	ex := t.Env.Client.Withheld(t.Ctx, path, h, 300000, t.Env.patience(), note)
	t.keep(ex)
	return ex
}

// HeadFirst sends the head of a POST and sends its body (300000 bytes of
// filler that is no JSON at all) only if the runner has not answered the
// head within the patience (see wire.Client.HeadFirst).
func (t *T) HeadFirst(path string, h map[string][]string, note string) *wire.Exchange {
	ex := t.Env.Client.HeadFirst(t.Ctx, path, h, filler, t.Env.patience(), note)
	t.keep(ex)
	return ex
}

// filler is a body nobody could execute: not JSON, and too big to be
// drained quietly by a server before it answers (see wire.Withheld).
var filler = bytes.Repeat([]byte("x"), 300000)

// Fail records that the rule is broken, shown by ex (which may be nil).
func (t *T) Fail(ex *wire.Exchange, format string, args ...any) {
	t.findings = append(t.findings, Finding{Message: fmt.Sprintf(format, args...), Ex: ex})
}

// Warn records a finding that only warns whatever the rule's strength: the
// behaviour it reports is inferred, not bound by a bold keyword. The
// message should say so.
func (t *T) Warn(ex *wire.Exchange, format string, args ...any) {
	t.findings = append(t.findings, Finding{Message: fmt.Sprintf(format, args...), Ex: ex, Inferred: true})
}

// Skip records that the rule cannot be decided here, and why.
func (t *T) Skip(format string, args ...any) { t.skip = fmt.Sprintf(format, args...) }

// Note adds a line shown beside the result whatever it is.
func (t *T) Note(format string, args ...any) { t.notes = append(t.notes, fmt.Sprintf(format, args...)) }

// Failed reports whether any finding has been recorded.
func (t *T) Failed() bool { return len(t.findings) > 0 }

// StatusDoc and DescribeDoc are the shared documents (guaranteed by the
// needs NeedStatus and NeedDescribe).
func (t *T) StatusDoc() map[string]any   { return t.Env.Status.Obj }
func (t *T) DescribeDoc() map[string]any { return t.Env.Describe.Obj }
