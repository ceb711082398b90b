package scripted

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, r *Runner, verb, ctype, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/postern/v0/"+verb, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The runner refuses a request as a conforming runner does, in §4.6's
// order, logs why, and answers a valid one with its script.
func TestRunnerValidatesAsARunnerDoes(t *testing.T) {
	s, _ := Lookup(InputKeys)
	r, err := Start(s.Script)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ok := `{"inputs":{"prompt":"x","Region.Code":"eu","max-words":10,"Top_K":"3"}}`
	for _, c := range []struct {
		ctype, body string
		status      int
		refused     string
	}{
		{"application/json; charset=utf-8", ok, 200, ""},
		{"application/json", ok, 200, ""},
		{"text/plain;charset=UTF-8", ok, 400, "not application/json"},
		{"", ok, 400, "no Content-Type"},
		{"application/json", `prompt=x`, 400, "not a JSON object"},
		{"application/json", `{"inputs":[]}`, 400, "inputs is not an object"},
		{"application/json", `{"inputs":{"prompt":"x","region.code":"eu","max-words":10,"Top_K":"3"}}`, 400, "Region.Code: required"},
		{"application/json", `{"inputs":{"prompt":"x","Region.Code":"eu","max-words":"10","Top_K":"3"}}`, 400, "max-words: a number input, sent as a string"},
		{"application/json", `{"inputs":{"prompt":"x","Region.Code":"eu","max-words":9,"Top_K":"3"}}`, 400, "below the minimum"},
		{"application/json", `{"inputs":{"prompt":"x","Region.Code":"eu","max-words":10,"Top_K":"4"}}`, 400, "not one of the options"},
		{"application/json", `{"inputs":{"prompt":"` + strings.Repeat("x", 201) + `","Region.Code":"eu","max-words":10,"Top_K":"3"}}`, 400, "longer than max_length"},
	} {
		if got := post(t, r, "run", c.ctype, c.body); got != c.status {
			t.Errorf("%q %s: %d, want %d", c.ctype, c.body, got, c.status)
		}
		log, _ := r.Log()
		last := log[len(log)-1]
		if (c.refused == "") != (last.Refused == "") || !strings.Contains(last.Refused, c.refused) {
			t.Errorf("%q %s: refused %q, want %q", c.ctype, c.body, last.Refused, c.refused)
		}
	}
	l2, _ := Lookup(LevelTwoStream)
	r2, err := Start(l2.Script)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if got := post(t, r2, "stream", "text/plain", "x"); got != http.StatusNotImplemented {
		t.Errorf("stream above the level, however malformed: %d, want 501 (§4.6: the level first)", got)
	}
}

// The log keeps LogCap requests and counts the rest.
func TestRunnerLogIsCapped(t *testing.T) {
	s, _ := Lookup(PlainRun)
	r, err := Start(s.Script)
	if err != nil {
		t.Fatal(err)
	}
	for range LogCap + 5 {
		resp, err := http.Get(r.URL + "/postern/v0/status")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	r.Close()
	log, dropped := r.Log()
	if len(log) != LogCap || dropped != 5 {
		t.Errorf("kept %d, dropped %d", len(log), dropped)
	}
}

// Every scenario's documents are JSON its own runner can read, and every
// stream scenario ends in done.
func TestScenariosAreWellFormed(t *testing.T) {
	for _, s := range Scenarios() {
		if _, err := inputsOf(s.Script.Describe); err != nil {
			t.Errorf("%s: describe: %v", s.Name, err)
		}
		if s.Verb == "stream" && s.Script.Level >= 3 && !s.Script.Stream.Drop {
			var all []byte
			for _, c := range s.Script.Stream.Chunks {
				all = append(all, c...)
			}
			if !strings.Contains(string(all), "done") {
				t.Errorf("%s: the stream carries no done", s.Name)
			}
		}
	}
}
