package wire

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// NeedCurl skips a test that runs curl where there is none, and fails it
// under CI=true, where .ci/run installs Debian's curl. (Exported for the
// package's external tests.)
func NeedCurl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no curl on PATH: the reproduce lines are tested with Debian's curl package; CI=true, so this is a failure")
		}
		t.Skip("no curl on PATH: apt-get install -y curl")
	}
}

// received is a request as the server read it.
type received struct {
	method, target string
	header         http.Header
	body           []byte
}

// TestReproduceWithCurl sends requests with the checker's client, runs
// the curl line each exchange gives under sh, and compares what the
// server received the second time with the first: method, request target
// (raw, as sent), every header the checker set, and the body, byte for
// byte.
func TestReproduceWithCurl(t *testing.T) {
	NeedCurl(t)
	var mu sync.Mutex
	var got []received
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Method, r.RequestURI, r.Header.Clone(), b})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, `{"error":{"code":"teapot"}}`)
	}), Options{Timeout: 5 * time.Second})
	jsonPost := func(verb, body string) Request { return PostJSON(verb, body) }
	withHeader := func(r Request, kv ...string) Request {
		if r.Header == nil {
			r.Header = http.Header{}
		}
		for i := 0; i < len(kv); i += 2 {
			r.Header.Add(kv[i], kv[i+1])
		}
		return r
	}
	cases := map[string]Request{
		"get":               Get("status"),
		"json":              jsonPost("run", `{"inputs": {"q": "it's \"quoted\" $HOME `+"`id`"+` \\ %s"}}`),
		"control bytes":     jsonPost("run", "{\"inputs\": \"a\x00b\nc\td\xff\xfe\u202e\"}"),
		"at sign":           jsonPost("run", "@/etc/passwd"),
		"no content type":   {Method: http.MethodPost, Path: Prefix + "run", Body: []byte(`{"inputs":{}}`)},
		"empty post":        {Method: http.MethodPost, Path: Prefix + "run"},
		"long body":         jsonPost("run", `{"inputs": {"q": "`+strings.Repeat("x", 3000)+`"}}`),
		"preflight":         withHeader(Request{Method: http.MethodOptions, Path: Prefix + "run"}, "Origin", "https://app.example.test", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type"),
		"delete":            {Method: http.MethodDelete, Path: Prefix + "run"},
		"encoded and globs": {Method: http.MethodGet, Path: "/v1/entitlements/acme%2Fx/y?q=[1]{2}"},
		"dot segments":      {Method: http.MethodGet, Path: Prefix + "../v0/./status"},
		"two values":        withHeader(Get("status"), "X-Twice", "one", "X-Twice", "two; it's"),
		"plain text":        withHeader(Request{Method: http.MethodPost, Path: Prefix + "stream", Body: []byte("hello")}, "Content-Type", "text/plain; charset=utf-8"),
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			ex := c.Do(context.Background(), r)
			assert.NilError(t, ex.Err)
			rep := ex.Reproduce(5 * time.Second)
			assert.Assert(t, rep.Curl != "", "no line: %s", rep.Note)
			assert.Check(t, !strings.ContainsAny(rep.Curl, "\n\r\x00"), "one line: %q", rep.Curl)
			out, err := exec.Command("sh", "-c", rep.Curl).CombinedOutput()
			assert.NilError(t, err, "%s\n%s", rep.Curl, out)
			assert.Check(t, is.Contains(string(out), "HTTP/1.1 418"), "curl -i prints the answer's head: %s", out)
			assert.Check(t, is.Contains(string(out), `{"error":{"code":"teapot"}}`))
			mu.Lock()
			defer mu.Unlock()
			assert.Assert(t, is.Len(got, 2), rep.Curl)
			first, again := got[0], got[1]
			assert.Check(t, is.Equal(again.method, first.method), rep.Curl)
			assert.Check(t, is.Equal(again.target, first.target), rep.Curl)
			assert.Check(t, bytes.Equal(again.body, first.body), "%s\nsent %q\ncurl %q", rep.Curl, first.body, again.body)
			for k, vs := range first.header {
				switch k {
				case "User-Agent", "Accept-Encoding", "Connection": // the client's own, per connection
					continue
				}
				assert.Check(t, is.DeepEqual(again.header[k], vs), "%s: %s", k, rep.Curl)
			}
			for k := range again.header {
				switch k {
				case "User-Agent", "Accept": // curl's own, harmless
					continue
				}
				_, sent := first.header[k]
				assert.Check(t, sent, "curl added %s: %s", k, rep.Curl)
			}
		})
	}
}

func TestReproduceSaysWhyNot(t *testing.T) {
	withheld := &Exchange{Method: http.MethodPost, URL: "http://127.0.0.1:1/postern/v0/run", Unreplayable: "the body was withheld"}
	assert.Check(t, is.DeepEqual(withheld.Reproduce(time.Second), Reproduction{Note: "the body was withheld"}))
	hung := &Exchange{Method: http.MethodPost, URL: "http://127.0.0.1:1/postern/v0/stream", Status: 200, Err: ErrHungUp}
	assert.Check(t, is.Equal(hung.Reproduce(time.Second).Curl, ""))
	assert.Check(t, is.Contains(hung.Reproduce(time.Second).Note, "hung up on purpose"))
	huge := &Exchange{Method: http.MethodPost, URL: "http://127.0.0.1:1/postern/v0/run", ReqBody: make([]byte, maxCurlBody+1)}
	assert.Check(t, is.Contains(huge.Reproduce(time.Second).Note, "too long for a command line"))
	assert.Check(t, is.DeepEqual((*Exchange)(nil).Reproduce(time.Second), Reproduction{}))
	crlf := &Exchange{Method: http.MethodGet, URL: "http://127.0.0.1:1/x", ReqHeader: http.Header{"X-Bad": {"a\r\nInjected: 1"}}}
	assert.Check(t, is.Equal(crlf.Reproduce(time.Second).Curl, ""), "a header that would break the line gives none")
}

func TestReproduceNotes(t *testing.T) {
	ran := &Exchange{Method: http.MethodPost, URL: "http://127.0.0.1:1/postern/v0/run", ReqBody: []byte(`{"inputs":{}}`),
		ReqHeader: http.Header{"Content-Type": {"application/json"}, "Authorization": {redactedValue}}, Status: 200}
	rep := ran.Reproduce(10 * time.Second)
	assert.Check(t, is.Equal(rep.Curl, `curl -sS -i --max-time 10 -H 'Authorization: [redacted]' -H 'Content-Type: application/json' --data-binary '{"inputs":{}}' http://127.0.0.1:1/postern/v0/run`))
	assert.Check(t, is.Contains(rep.Note, "Authorization is redacted"))
	assert.Check(t, is.Contains(rep.Note, "runs the agent again"))
	blotted := &Exchange{Method: http.MethodGet, URL: "http://127.0.0.1:1/v1/entitlements/acme/x?access_token=[token]"}
	rep = blotted.Reproduce(0)
	assert.Check(t, is.Equal(rep.Curl, `curl -sS -i --globoff 'http://127.0.0.1:1/v1/entitlements/acme/x?access_token=[token]'`))
	assert.Check(t, is.Contains(rep.Note, "blotted out as [token]"))
	stream := &Exchange{Method: http.MethodPost, URL: "https://runner.example/postern/v0/stream", ReqBody: []byte("{}"), ReqHeader: http.Header{"Content-Type": {"application/json"}}, Status: 400}
	assert.Check(t, is.Equal(stream.Reproduce(time.Second).Curl, `curl -sS -i --max-time 1 --http1.1 --no-buffer -H 'Content-Type: application/json' --data-binary '{}' https://runner.example/postern/v0/stream`))
	assert.Check(t, is.Equal(stream.Reproduce(time.Second).Note, ""))
}

// TestWithheldIsUnreplayable: the head-first probes say why curl cannot
// send them so, whether the runner answered from the head or only once the
// body came.
func TestWithheldIsUnreplayable(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") == "text/plain" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
	}), Options{Timeout: 5 * time.Second})
	h := http.Header{"Content-Type": {"text/plain"}}
	ex := c.Withheld(context.Background(), Prefix+"run", h, 300000, time.Second, "withheld")
	assert.Check(t, is.Equal(ex.Status, http.StatusUnsupportedMediaType))
	assert.Check(t, is.Equal(ex.Reproduce(time.Second).Curl, ""))
	assert.Check(t, is.Contains(ex.Reproduce(time.Second).Note, "held the body back"))
	late := c.HeadFirst(context.Background(), Prefix+"run", http.Header{"Content-Type": {"application/json"}}, []byte("{}"), 50*time.Millisecond, "late")
	assert.Check(t, late.BodySentLate)
	assert.Check(t, is.Equal(late.Reproduce(time.Second).Curl, ""))
	assert.Check(t, is.Contains(late.Reproduce(time.Second).Note, "curl sends both at once"))
}
