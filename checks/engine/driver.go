package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/sigrix-io/postern-conformance/wire"
)

// Result is what one rule came to.
type Result[E any] struct {
	Rule      *Rule[E]
	Outcome   Outcome
	Findings  []Finding // why it failed or warned
	Reason    string    // why it was skipped, or what went wrong in the checker
	Kind      SkipKind  // the kind of a SKIP; "" for any other outcome
	Notes     []string
	Exchanges []*wire.Exchange // every request the probe sent or cited
	Elapsed   time.Duration
}

// Suite is what a mode hands the driver.
type Suite[E any] struct {
	// Rules is the mode's whole registry. An Evidence rule's input is drawn
	// from all of it, whatever is selected.
	Rules []*Rule[E]
	// Gate, where set, says why a rule cannot run against this target at
	// all (a level it does not declare), or "".
	Gate func(e E, r *Rule[E]) string
	// Review, where set, sees each probe's findings before its outcome is
	// decided, and may Drop them for a reason of the mode's own.
	Review func(t *T[E])
	// Finish, where set, runs once every rule is decided, before the
	// results are returned (to blot secrets out of the evidence, say).
	Finish func(e E, s *Session)
	// HeadDecides says every POST a rule that does not start the agent sends
	// (and a fact) is one a conforming target refuses: a 2xx status line is
	// then the whole answer, and its body is not waited for (see T.Do).
	HeadDecides bool
	// OwnDeadline is the run's deadline where the user chose it (zero where
	// it is the mode's default): the rules it leaves undecided say so, since
	// a longer one may decide them.
	OwnDeadline time.Duration
	// Workers bounds the rules evaluated at once; zero means DefaultWorkers.
	Workers int
	// AgentSlots, where set, is how many Agent rules may be evaluated at
	// once against this target (the runs it declares it takes at once);
	// unset or below one means one at a time. Rules marked Alone always
	// run one at a time.
	AgentSlots func(e E) int
	// Progress, where set, is told as each rule starts and as each is
	// decided: how many of the run's rules are decided out of its total,
	// and the ID of the rule being decided the longest (or "" when none
	// is). The total counts every rule the run evaluates, so it includes
	// the rules an Evidence rule draws on. Calls come one at a time, from
	// the run's own goroutines, with decided never going back; Progress
	// should return at once.
	Progress Progress
}

// Progress is the signature of Suite.Progress.
type Progress func(decided, total int, current string)

// DefaultWorkers bounds the rules a run evaluates at once.
const DefaultWorkers = 8

// run is one checking run.
type run[E any] struct {
	suite Suite[E]
	sess  *Session
	env   E
	ctx   context.Context

	mu    sync.Mutex
	facts map[Dep[E]]*factState

	tally *Tally
}

// Tally keeps the count a Progress is told: how many of total things
// (rules, or a fleet's runners) are done, and the one under way longest.
// Started and Done may be called from any goroutine; report is called one
// call at a time. A Tally with no report does nothing.
type Tally struct {
	mu      sync.Mutex
	report  Progress
	total   int
	done    int
	running []string // under way, oldest first
}

// NewTally counts total things for report (which may be nil).
func NewTally(report Progress, total int) *Tally { return &Tally{report: report, total: total} }

// Started says the thing named id is under way.
func (t *Tally) Started(id string) {
	if t.report == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running = append(t.running, id)
	t.report(t.done, t.total, t.running[0])
}

// Done says the thing named id is done.
func (t *Tally) Done(id string) {
	if t.report == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.running, id); i >= 0 {
		t.running = slices.Delete(t.running, i, i+1)
	}
	t.done++
	current := ""
	if len(t.running) > 0 {
		current = t.running[0]
	}
	t.report(t.done, t.total, current)
}

// Run evaluates the selected rules against env over sess. Every selected
// rule yields exactly one Result, in the order given. ctx's deadline is the
// run's: the rules not decided by then SKIP, saying so.
//
// The order of evaluation is the driver's: every fact a rule requires
// starts at once, in the background, except a fact only rules that start
// the agent require, which starts when the first of them needs it; the
// probing rules run side by side, at most Workers at a time; then the
// rules that start the agent: those marked Alone one at a time, with
// nothing else in flight, and the rest AgentSlots at a time; the Evidence
// rules last, over everything the others sent.
func Run[E any](ctx context.Context, suite Suite[E], sess *Session, env E, selected []*Rule[E]) []Result[E] {
	sess.setRunContext(ctx)
	r := &run[E]{suite: suite, sess: sess, env: env, ctx: ctx, facts: map[Dep[E]]*factState{}}
	index := map[*Rule[E]]int{}
	for i, rule := range selected {
		index[rule] = i
	}
	exec := append([]*Rule[E](nil), selected...)
	for _, rule := range selected {
		if rule.Evidence {
			for _, other := range suite.Rules {
				if _, ok := index[other]; !ok && !other.Evidence {
					index[other] = -1
					exec = append(exec, other)
				}
			}
			break
		}
	}
	r.tally = NewTally(suite.Progress, len(exec))
	for _, rule := range exec {
		for _, d := range rule.Requires {
			if !rule.Agent {
				r.startFact(d, false)
			}
		}
	}
	var probing, alone, agent, evidence []*Rule[E]
	for _, rule := range exec {
		switch {
		case rule.Evidence:
			evidence = append(evidence, rule)
		case rule.Agent && rule.Alone:
			alone = append(alone, rule)
		case rule.Agent:
			agent = append(agent, rule)
		default:
			probing = append(probing, rule)
		}
	}
	results := make(map[*Rule[E]]Result[E], len(exec))
	var mu sync.Mutex
	keep := func(res Result[E]) {
		mu.Lock()
		results[res.Rule] = res
		mu.Unlock()
	}
	workers := suite.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	slots := 1
	if suite.AgentSlots != nil {
		slots = max(1, suite.AgentSlots(env))
	}
	r.pool(probing, workers, keep)
	r.pool(alone, 1, keep)
	r.pool(agent, slots, keep)
	r.pool(evidence, workers, keep)
	if suite.Finish != nil {
		suite.Finish(env, sess)
	}
	out := make([]Result[E], len(selected))
	for i, rule := range selected {
		out[i] = results[rule]
	}
	return out
}

// pool evaluates rules, at most n at once.
func (r *run[E]) pool(rules []*Rule[E], n int, keep func(Result[E])) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for _, rule := range rules {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r.tally.Started(rule.ID)
			keep(r.evaluate(rule))
			r.tally.Done(rule.ID)
		}()
	}
	wg.Wait()
}

// factState returns d's computation in this run, or nil where none runs.
func (r *run[E]) factState(d Dep[E]) *factState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.facts[d]
}

// startFact starts computing d, once, after its own requirements. agent
// says the first rule to need it starts the agent: a fact only such rules
// require is started by them (lazily), and may run the agent itself, so its
// POSTs are not decided from a 2xx head (Suite.HeadDecides).
func (r *run[E]) startFact(d Dep[E], agent bool) *factState {
	r.mu.Lock()
	if st := r.facts[d]; st != nil {
		r.mu.Unlock()
		return st
	}
	st := &factState{done: make(chan struct{})}
	r.facts[d] = st
	r.mu.Unlock()
	var deps []*factState
	for _, dd := range d.deps() {
		deps = append(deps, r.startFact(dd, agent))
	}
	go func() {
		defer close(st.done)
		for i, ds := range deps {
			if why, kind := r.await(ds); why != "" {
				st.why, st.kind = fmt.Sprintf("%s: %s", d.deps()[i].name(), why), kind
				return
			}
		}
		t := &T[E]{Ctx: r.ruleCtx(agent), Env: r.env, Rule: &Rule[E]{ID: "fact " + d.name(), Requires: d.deps()}, run: r}
		var val any
		var why string
		p, stack := probe(func() { val, why = d.compute(t) })
		st.sent = t.sent
		switch {
		case p != nil:
			st.why = fmt.Sprintf("the checker failed computing %s: %v\n%s", d.name(), p, stack)
			st.kind = Undecided
		case t.skip != "":
			st.why, st.kind = t.skip, t.kind
		default:
			st.val, st.why, st.kind = val, why, NotApplicable
		}
	}()
	return st
}

// ruleCtx is the context a rule (or a fact) sends under: in a mode whose
// probes are refusals, every one but a rule that starts the agent has its
// POSTs decided by a 2xx head (Suite.HeadDecides).
func (r *run[E]) ruleCtx(agent bool) context.Context {
	if r.suite.HeadDecides && !agent {
		return refusals(r.ctx)
	}
	return r.ctx
}

// await waits for a fact and returns why it is unavailable, and the kind
// of SKIP that makes, or "".
func (r *run[E]) await(st *factState) (string, SkipKind) {
	select {
	case <-st.done:
		return st.why, st.kind
	case <-r.ctx.Done():
		return r.deadlineWords(), Undecided
	}
}

// deadlineWords says why a rule the run's end cut short is undecided.
func (r *run[E]) deadlineWords() string {
	switch {
	case !errors.Is(r.ctx.Err(), context.DeadlineExceeded):
		return "not decided: the run was stopped"
	case r.suite.OwnDeadline > 0:
		return fmt.Sprintf("not decided: the run's deadline of %s, which --deadline set, passed first; a longer --deadline may decide it", r.suite.OwnDeadline)
	}
	return "not decided: the run's deadline passed first (the runner stopped answering, or answered too slowly; see --deadline)"
}

// probe runs f in a goroutine of its own, so that T.Skip can stop it, and
// returns what it panicked with, if anything.
func probe(f func()) (panicked any, stack []byte) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				panicked, stack = p, debug.Stack()
			}
		}()
		f()
	}()
	<-done
	return panicked, stack
}

func (r *run[E]) evaluate(rule *Rule[E]) (res Result[E]) {
	res.Rule = rule
	skip := func(why string, kind SkipKind) Result[E] {
		res.Outcome, res.Reason, res.Kind = Skip, why, kind
		return res
	}
	if r.ctx.Err() != nil {
		return skip(r.deadlineWords(), Undecided)
	}
	if r.suite.Gate != nil {
		if why := r.suite.Gate(r.env, rule); why != "" {
			return skip(why, NotApplicable)
		}
	}
	for _, n := range rule.Needs {
		if why := n.Check(r.env); why != "" {
			return skip(why, n.kind())
		}
	}
	for _, d := range rule.Requires {
		if why, kind := r.await(r.startFact(d, rule.Agent)); why != "" {
			return skip(why, kind)
		}
	}
	t := &T[E]{Ctx: r.ruleCtx(rule.Agent), Env: r.env, Rule: rule, run: r}
	start := time.Now()
	p, stack := probe(func() { rule.Probe(t) })
	res.Elapsed = time.Since(start)
	res.Exchanges, res.Notes = t.sent, t.notes
	if p != nil {
		res.Outcome = Error
		res.Reason = fmt.Sprintf("the checker failed evaluating this rule: %v\n%s", p, stack)
		return res
	}
	r.unsent(t)
	if r.suite.Review != nil {
		r.suite.Review(t)
	}
	switch {
	case len(t.findings) > 0:
		res.Outcome, res.Findings = Warn, t.findings
		for _, f := range t.findings {
			if !f.Inferred {
				res.Outcome = rule.Strength()
			}
		}
	case t.skip != "":
		res.Outcome, res.Reason, res.Kind = Skip, t.skip, t.kind
	default:
		res.Outcome = Pass
	}
	return res
}

// unsent sets aside what a probe could not see: a finding shown by a
// request the run never sent (its route had stopped answering) or one the
// run's deadline cut short says nothing about the rule. Where nothing else
// is left, the rule is skipped with the reason.
func (r *run[E]) unsent(t *T[E]) {
	var kept []Finding
	why := ""
	for _, f := range t.findings {
		switch {
		case f.Ex != nil && errors.Is(f.Ex.Err, ErrDeadline):
			why = r.deadlineWords()
		case f.Ex != nil && errors.Is(f.Ex.Err, ErrGaveUp):
			why = fmt.Sprintf("not decided: %s was not sent, since the runner had stopped answering it (or had stopped answering altogether)", f.Ex.RequestLine())
		default:
			kept = append(kept, f)
		}
	}
	if why == "" && len(t.findings) == 0 && t.skip == "" && r.ctx.Err() != nil {
		for _, ex := range t.sent {
			if errors.Is(ex.Err, ErrDeadline) {
				why = r.deadlineWords()
			}
		}
	}
	t.findings = kept
	if len(kept) == 0 && why != "" {
		t.skip, t.kind = why, Undecided
	}
	// A SKIP the probe chose for what it saw is undecided all the same
	// where what it saw was a request never sent, or cut off by the
	// deadline: it saw nothing of the target.
	if len(kept) == 0 && t.skip != "" && t.kind != Undecided {
		for _, ex := range t.sent {
			if ex != nil && (errors.Is(ex.Err, ErrGaveUp) || errors.Is(ex.Err, ErrDeadline)) {
				t.skip, t.kind = t.skip+" (undecided: "+ex.RequestLine()+" "+ex.Err.Error()+")", Undecided
				break
			}
		}
	}
}
