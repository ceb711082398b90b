package levels

import (
	"net/http"
	"testing"

	"github.com/sigrix-io/postern-conformance/checks/engine"
	"github.com/sigrix-io/postern-conformance/wire"
	"gotest.tools/v3/assert"
)

func result(id string, level int, o engine.Outcome) engine.Record {
	r := engine.Record{Rule: engine.About{ID: id, Level: level, Keyword: engine.Must}, Outcome: o}
	if o == engine.Skip {
		r.Kind = engine.NotApplicable
	}
	return r
}

func undecided(id string, level int, ex *wire.Exchange) engine.Record {
	r := result(id, level, engine.Skip)
	r.Kind, r.Reason, r.Exchanges = engine.Undecided, "not decided", []*wire.Exchange{ex}
	return r
}

func TestDecide(t *testing.T) {
	ok := []engine.Record{result("a/x", 1, engine.Pass), result("a/y", 2, engine.Warn), result("a/z", 3, engine.Skip)}
	assert.Equal(t, Decide(3, ok, nil).Text, "Conformant at Level 3.")

	broken := append(ok, result("b/x", 1, engine.Fail), result("b/y", 3, engine.Fail))
	v := Decide(3, broken, nil)
	assert.Equal(t, v.Text, "Nonconformant at declared Level 3: 2 MUST rules broken.")
	assert.Equal(t, v.Broken, 2)
	assert.Assert(t, !v.Conformant)

	v = Decide(3, broken, map[string]bool{"b/y": true})
	assert.Equal(t, v.Broken, 1)
	assert.Equal(t, v.Baselined, 1)
	assert.Equal(t, v.Text, "Nonconformant at declared Level 3: 1 MUST rule broken. (1 known failure excused by the baseline.)")

	v = Decide(0, ok, nil)
	assert.Assert(t, !v.Conformant, "no declared level is never conformant")
}

// TestNotDetermined: a rule at or below the level that the checker could
// not decide leaves the verdict undetermined, naming what the runner left
// unanswered; one above the level does not; a FAIL still decides.
func TestNotDetermined(t *testing.T) {
	run := &wire.Exchange{Method: "POST", URL: "http://127.0.0.1:1/postern/v0/run", Status: 200, Err: wire.ErrNoAnswer}
	stream := &wire.Exchange{Method: "POST", URL: "http://127.0.0.1:1/postern/v0/stream", Err: wire.ErrNoAnswer}
	rs := []engine.Record{result("a/x", 1, engine.Pass), undecided("b/x", 2, run), undecided("b/y", 2, run), undecided("b/z", 3, stream)}
	v := Decide(3, rs, nil)
	assert.Assert(t, !v.Conformant && !v.Determined())
	assert.Equal(t, v.Undecided, 3)
	assert.Equal(t, v.Text, "Not determined at Level 3: 3 rules undecided (the runner stopped answering POST run).")

	v = Decide(2, rs, nil)
	assert.Equal(t, v.Undecided, 2, "an undecided rule above the declared level does not count")

	v = Decide(3, append(rs, result("c/x", 1, engine.Fail)), nil)
	assert.Assert(t, v.Determined())
	assert.Equal(t, v.Text, "Nonconformant at declared Level 3: 1 MUST rule broken. (3 rules undecided as well.)")

	v = Decide(1, []engine.Record{result("a/x", 1, engine.Pass), result("a/y", 1, engine.Skip)}, nil)
	assert.Assert(t, v.Conformant, "a SKIP that is not undecided does not stand in the way")
}

// TestNotDeterminedForWantOfACredential: where the runner's own 401 to a
// request carrying no Authorization left at least half the undecided
// rules so, the verdict names that, and the one flag that remedies it.
func TestNotDeterminedForWantOfACredential(t *testing.T) {
	refused := &wire.Exchange{Method: "POST", URL: "http://127.0.0.1:1/postern/v0/run", Status: 401, ReqHeader: http.Header{},
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"error":{"code":"unauthorized","message":"no","detail":null}}`)}
	silent := &wire.Exchange{Method: "POST", URL: "http://127.0.0.1:1/postern/v0/stream", Err: wire.ErrNoAnswer}
	rs := []engine.Record{undecided("b/x", 2, refused), undecided("b/y", 2, refused), undecided("b/z", 3, silent)}
	assert.Equal(t, Decide(3, rs, nil).Text,
		"Not determined at Level 3: 3 rules undecided (POST run was answered 401 unauthorized: the runner requires inbound authentication (§7); pass --header 'Authorization: …').")

	// A credential was sent: the 401 is not for want of one.
	sent := *refused
	sent.ReqHeader = http.Header{"Authorization": {"[redacted]"}}
	rs = []engine.Record{undecided("b/x", 2, &sent), undecided("b/z", 3, silent)}
	assert.Equal(t, Decide(3, rs, nil).Text, "Not determined at Level 3: 2 rules undecided (the runner stopped answering POST stream).")
}
