package client

// The judgements the rules share: reading a trial (what the client sent,
// how it ended, what it printed), the gates a rule passes before it
// judges (the scenario ran, the client finished, its request was served,
// it streams), and the evidence every finding carries.

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/checks/client/scripted"
	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// sent is every request to verb the client sent, in order.
func (tr *Trial) sent(verb string) []scripted.Request {
	var out []scripted.Request
	for _, q := range tr.Requests {
		if q.Verb == verb && q.Ex.Method != http.MethodOptions {
			out = append(out, q)
		}
	}
	return out
}

// runs is every run or stream request the client sent, in order.
func (tr *Trial) runs() []scripted.Request {
	var out []scripted.Request
	for _, q := range tr.Requests {
		if protocol.Posts(q.Verb) && q.Ex.Method == http.MethodPost {
			out = append(out, q)
		}
	}
	return out
}

// refused is the first run or stream request the scripted runner refused
// for what it said, or nil.
func (tr *Trial) refused() *scripted.Request {
	for _, q := range tr.runs() {
		if q.Refused != "" {
			return &q
		}
	}
	return nil
}

// servedOne reports whether some run or stream request was not refused for
// what it said.
func (tr *Trial) servedOne() bool {
	for _, q := range tr.runs() {
		if q.Refused == "" {
			return true
		}
	}
	return false
}

// key is the exchange a finding about the trial shows: the last run or
// stream request, else the last request, else none.
func (tr *Trial) key() *wire.Exchange {
	if rs := tr.runs(); len(rs) > 0 {
		return rs[len(rs)-1].Ex
	}
	if len(tr.Requests) > 0 {
		return tr.Requests[len(tr.Requests)-1].Ex
	}
	return nil
}

// printed reports whether stdout is exactly want, a line end after it
// forgiven (a command line ends what it prints with one).
func (tr *Trial) printed(want string) bool {
	out := tr.Process.Stdout
	if tr.Process.StdoutCut {
		return false
	}
	for _, end := range []string{"", "\n", "\r\n"} {
		if string(out) == want+end {
			return true
		}
	}
	return false
}

// said reports whether the client wrote s, on stderr or stdout.
func (tr *Trial) said(s string) bool {
	p := tr.Process
	return s != "" && (bytes.Contains(p.Stderr, []byte(s)) || bytes.Contains(p.Stdout, []byte(s)) ||
		bytes.Contains(p.StderrTail, []byte(s)))
}

// shows reports whether stdout carries s: the output as the user sees it.
func (tr *Trial) shows(s string) bool {
	return s != "" && (bytes.Contains(tr.Process.Stdout, []byte(s)) || bytes.Contains(tr.Process.StdoutTail, []byte(s)))
}

// cite adds the trial's requests to the rule's evidence (the first few,
// where a client sent many).
func cite(t *T, tr *Trial) {
	for i, q := range tr.Requests {
		if i == 12 {
			break
		}
		t.Cite(q.Ex)
	}
}

// evidence is what every finding about a trial carries: the scenario, the
// exit status, and the tails of stdout and stderr.
func (tr *Trial) evidence() string {
	p := tr.Process
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s (POSTERN_VERB=%s): the client %s", tr.Scenario.Name, tr.Scenario.Verb, p.ending())
	fmt.Fprintf(&b, "; it sent %s", tr.brief())
	fmt.Fprintf(&b, "\nstdout: %s\nstderr: %s", quoteTail(p.StdoutTail, p.StdoutCut || len(p.StdoutTail) < len(p.Stdout)), quoteTail(p.StderrTail, len(p.StderrTail) < len(p.Stderr)))
	return b.String()
}

// ending says how the client ended.
func (p Process) ending() string {
	took := p.Elapsed.Round(time.Millisecond)
	switch {
	case !p.Started:
		return "it could not be started: " + p.Err
	case p.Killed:
		return fmt.Sprintf("was killed at its deadline, after %s", took)
	case p.Crashed:
		return fmt.Sprintf("died of %s after %s (exit %d)", p.Signal, took, p.Exit)
	case p.Signal != "":
		return fmt.Sprintf("was ended by %s after %s", p.Signal, took)
	}
	return fmt.Sprintf("exited %d after %s", p.Exit, took)
}

// brief lists the requests as "GET describe 200, POST run 400 bad_request".
func (tr *Trial) brief() string {
	if len(tr.Requests) == 0 {
		return "no request"
	}
	var parts []string
	for i, q := range tr.Requests {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(tr.Requests)-i+tr.Dropped))
			break
		}
		what := q.Verb
		if what == "" {
			what = pathOf(q.Ex.URL)
		}
		parts = append(parts, q.Ex.Method+" "+what+" "+q.Ex.Brief())
	}
	if tr.Dropped > 0 && len(tr.Requests) <= 8 {
		parts = append(parts, fmt.Sprintf("and %d more", tr.Dropped))
	}
	return strings.Join(parts, ", ")
}

func pathOf(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexByte(u[i+3:], '/'); j >= 0 {
			return u[i+3+j:]
		}
	}
	return u
}

// quoteTail is the last bytes of a stream, quoted and made printable.
func quoteTail(b []byte, cut bool) string {
	if len(b) == 0 {
		return "(nothing)"
	}
	const keep = 300
	prefix := ""
	if len(b) > keep {
		b, cut = b[len(b)-keep:], true
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	if cut {
		prefix = "…"
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
	return prefix + fmt.Sprintf("%q", s)
}

// fail records a finding about tr, shown by ex (the trial's key exchange
// where nil), carrying the trial's evidence.
func fail(t *T, tr *Trial, ex *wire.Exchange, format string, args ...any) {
	if ex == nil {
		ex = tr.key()
	}
	t.Fail(ex, "%s\n%s", fmt.Sprintf(format, args...), tr.evidence())
}

// warn is fail for a finding that only warns (it is inferred).
func warn(t *T, tr *Trial, ex *wire.Exchange, format string, args ...any) {
	if ex == nil {
		ex = tr.key()
	}
	t.Warn(ex, "%s\n%s", fmt.Sprintf(format, args...), tr.evidence())
}

// needScenario is the need of a rule observed in the scenarios named: it
// is met where any of them ran (--scenario may leave them out).
func needScenario(names ...string) engine.Need[*Env] {
	return engine.Need[*Env]{Name: "scenario " + strings.Join(names, ", "), Kind: engine.NeedsOption,
		Check: func(e *Env) string {
			for _, n := range names {
				if e.Trial(n) != nil {
					return ""
				}
			}
			return "needs the scenario " + strings.Join(names, " or ") + ", which --scenario left out"
		}}
}

// trialOf is the trial of scenario name, its requests cited as the rule's
// evidence; a rule whose scenario was not run (--scenario), or whose
// runner could not start, SKIPs.
func trialOf(t *T, name string) *Trial {
	tr := t.Env.Trial(name)
	if tr == nil {
		t.NeedsOption("the scenario %s was not run (--scenario left it out)", name)
	}
	if tr.Err != nil {
		t.Undecided("the scripted runner of %s could not start: %v", name, tr.Err)
	}
	cite(t, tr)
	return tr
}

// finished fails the rule where the client had not finished at its
// deadline: no answer was withheld from it, so a conforming client had
// finished. Where the scenario withholds one, the rule is undecided.
func finished(t *T, tr *Trial) {
	if !tr.Process.Killed {
		return
	}
	if tr.Scenario.Withholds {
		t.Undecided("the client had not finished at its deadline (--client-timeout %s), and the scenario withholds an answer it may have been waiting on", t.Env.ClientTimeout)
	}
	fail(t, tr, nil, "the client had not finished after --client-timeout (%s) and was killed, though the runner had answered at once everything it asked: a conforming client had finished", t.Env.ClientTimeout)
	t.NotApplicable("the client was killed at its deadline")
}

// served skips a rule where the scripted runner refused every run or
// stream request the client sent for what the request said (its media
// type, its body, its inputs), as any runner would: the scenario never
// reached what the rule tests, and 2/client-json-body and 4.2/client-inputs
// judge the request.
func served(t *T, tr *Trial) {
	if q := tr.refused(); q != nil && !tr.servedOne() {
		t.NotApplicable("the scripted runner refused the client's %s %s as any runner would (%s), so the scenario never reached what this rule tests; 2/client-json-body and 4.2/client-inputs judge the request",
			q.Ex.Method, q.Verb, q.Refused)
	}
}

// streamed skips a stream rule where the client does not stream (asked
// for a stream in the plain stream scenario, it sent none), fails the
// plainest stream (4.3/client-plain-stream judges that), or sent no
// stream request in this scenario.
func streamed(t *T, tr *Trial) {
	if !t.Env.Streams {
		t.NotApplicable("the client does not stream: asked for a stream in %s, it sent no stream request, so no stream of this scenario reached it", scripted.PlainStream)
	}
	if ps := t.Env.Trial(scripted.PlainStream); ps != nil && !(ps.Process.Exit == 0 && ps.printed(ps.Scenario.Value)) && !ps.Process.Killed {
		t.NotApplicable("the client fails even the plainest stream, which 4.3/client-plain-stream judges")
	}
	served(t, tr)
	if len(tr.sent(protocol.Stream)) == 0 {
		t.NotApplicable("asked for a stream, the client sent no stream request in this scenario (it sent %s)", tr.brief())
	}
}

// printsValue fails the rule unless the client, in a scenario whose run
// succeeded, exited 0 and printed the output's value; why says what the
// scenario put in its way.
func printsValue(t *T, tr *Trial, why string) {
	p, want := tr.Process, tr.Scenario.Value
	switch {
	case p.Exit != 0 || p.Signal != "":
		fail(t, tr, nil, "%s, the run succeeded and the client reported a failure (%s), where done's or run's value is %q", why, p.ending(), want)
	case !tr.printed(want):
		fail(t, tr, nil, "%s, the client printed %s where the output's value is %q", why, quoteTail(p.Stdout, p.StdoutCut), want)
	}
}

// uncaught is the mark of a runtime's uncaught-error report in stderr (a
// Python traceback, a Go panic, a Node or Java stack), or "".
func uncaught(stderr []byte) string {
	for _, m := range uncaughtMarks {
		if m.re.Match(stderr) {
			return m.what
		}
	}
	return ""
}

var uncaughtMarks = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a Python traceback", regexp.MustCompile(`(?m)^Traceback \(most recent call last\):`)},
	{"a Go panic", regexp.MustCompile(`(?m)^panic: .*\n(?s:.*)^goroutine \d+ `)},
	{"a Node.js stack of an uncaught error", regexp.MustCompile(`(?m)^\s+at .+:\d+:\d+\)?$(?s:.*)^Node\.js v\d+`)},
	{"a Java stack of an uncaught exception", regexp.MustCompile(`(?m)^Exception in thread "`)},
}
