// Command chirunner is a Postern runner on go-chi/chi with rs/cors, written
// from SPEC alone as an outside runner author would. Conformant by default;
// each -mistake plants one error typical of this stack. The agent echoes its
// `text` input.
//
//	chirunner [-level 1|2|3] [-allow-origin URL]... [-idempotent]
//	          [-max-run-seconds N] [-max-concurrent N] [-credential ENV]
//	          [-auth-token TOKEN] [-agent-ms N] [-mistake NAME]...
//
// POSTERN_START_LOG names a file it appends one line to per agent start.
// It prints POSTERN_PORT=<port> first on stdout (§2) and logs to stderr.
//
// It is a module of its own under testdata, so the checker's go.mod does not
// carry chi or rs/cors.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"mime"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/cors"
)

// The mistakes this stack's runners ship, one switch each.
var mistakes = map[string]string{
	"struct-inputs":        "inputs decoded into a struct: encoding/json matches TEXT to the text field",
	"hijack-sse":           "the stream written on a hijacked connection: a raw head without the CORS headers",
	"chi-defaults":         "chi's own NotFound (text/plain) and MethodNotAllowed (an empty 405)",
	"cors-route-only":      "rs/cors with r.With on each route: OPTIONS meets chi's 405",
	"cors-allowed-origins": "Options.AllowedOrigins straight from the config: rs/cors reads an empty list as *",
	"cors-reflect":         "AllowOriginFunc that returns true: any Origin is echoed as allowed",
	"http-error":           "a body that is not JSON answered with http.Error: text/plain",
	"no-media-check":       "no Content-Type check: any body that decodes runs",
	"allow-content-type":   "chi's middleware.AllowContentType for the media type: an empty 415, before the level",
	"write-timeout":        "http.Server{WriteTimeout: 1s}, from a hardening guide: longer runs are cut, no limit declared",
}

type strList []string

func (s *strList) String() string     { return strings.Join(*s, ",") }
func (s *strList) Set(v string) error { *s = append(*s, v); return nil }

type config struct {
	level         int
	origins       strList
	idempotent    bool
	maxRunSeconds int
	maxConcurrent int
	credential    string
	authToken     string
	agentMs       int
	mistakes      map[string]bool
}

const (
	prefix    = "/postern/v0"
	retention = 600
)

var agentInfo = map[string]any{"id": "stacks/chi-echo", "name": "Echo on chi", "version": "1.0.0", "summary": "Repeats its text."}

var inputDecls = []map[string]any{
	{"key": "text", "label": "Text", "type": "text", "required": true, "default": nil, "validation": map[string]any{"max_length": 200}},
	{"key": "times", "label": "Times", "type": "number", "required": false, "default": 1, "validation": map[string]any{"min": 1, "max": 3}},
	{"key": "tone", "label": "Tone", "type": "select", "required": false, "default": "plain", "validation": map[string]any{"options": []string{"plain", "loud"}}},
}

func main() {
	var cfg config
	var ms strList
	flag.IntVar(&cfg.level, "level", 3, "conformance level, 1 to 3")
	flag.Var(&cfg.origins, "allow-origin", "an origin to allow (repeatable)")
	flag.BoolVar(&cfg.idempotent, "idempotent", false, "honour Idempotency-Key")
	flag.IntVar(&cfg.maxRunSeconds, "max-run-seconds", 0, "stop a run after N seconds (0: no limit)")
	flag.IntVar(&cfg.maxConcurrent, "max-concurrent", 4, "runs in flight at once")
	flag.StringVar(&cfg.credential, "credential", "", "an environment variable the agent needs")
	flag.StringVar(&cfg.authToken, "auth-token", "", "require Authorization: Bearer TOKEN")
	flag.IntVar(&cfg.agentMs, "agent-ms", 30, "how long the agent takes")
	flag.Var(&ms, "mistake", "plant a mistake (repeatable): "+strings.Join(sortedKeys(mistakes), ", "))
	flag.Parse()
	if cfg.level < 1 || cfg.level > 3 || cfg.maxConcurrent < 1 {
		fmt.Fprintln(os.Stderr, "chirunner: -level must be 1 to 3 and -max-concurrent at least 1")
		os.Exit(2)
	}
	cfg.mistakes = map[string]bool{}
	for _, m := range ms {
		if _, ok := mistakes[m]; !ok {
			fmt.Fprintf(os.Stderr, "chirunner: unknown mistake %q; known: %s\n", m, strings.Join(sortedKeys(mistakes), ", "))
			os.Exit(2)
		}
		cfg.mistakes[m] = true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chirunner:", err)
		os.Exit(1)
	}
	fmt.Printf("POSTERN_PORT=%d\n", ln.Addr().(*net.TCPAddr).Port)
	log.SetOutput(os.Stderr)
	log.Printf("chi runner: level %d, mistakes %v", cfg.level, sortedKeys(cfg.mistakes))
	srv := &http.Server{Handler: newRunner(cfg).routes(), ReadHeaderTimeout: 10 * time.Second}
	if cfg.mistakes["write-timeout"] {
		srv.WriteTimeout = time.Second
	}
	log.Fatal(srv.Serve(ln))
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

type answer struct {
	runID  string
	status int
	body   any
}

type keyEntry struct {
	inputs  string
	ans     answer
	expires time.Time
}

type runner struct {
	cfg      config
	inFlight atomic.Int64
	startMu  sync.Mutex
	seq      atomic.Int64
	mu       sync.Mutex
	answered map[string]keyEntry
}

func newRunner(cfg config) *runner { return &runner{cfg: cfg, answered: map[string]keyEntry{}} }

func (rn *runner) has(m string) bool { return rn.cfg.mistakes[m] }

func envelope(code, message string, detail any) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": message, "detail": detail}}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func refuse(w http.ResponseWriter, status int, code, message string, detail any) {
	writeJSON(w, status, envelope(code, message, detail))
}

// ---- routes and CORS (§2.3) ----

func (rn *runner) corsHandler() func(http.Handler) http.Handler {
	headers := []string{"Content-Type"}
	if rn.cfg.idempotent {
		headers = append(headers, "Idempotency-Key")
	}
	if rn.cfg.authToken != "" {
		headers = append(headers, "Authorization")
	}
	opts := cors.Options{
		AllowedMethods: []string{http.MethodGet, http.MethodPost},
		AllowedHeaders: headers,
		MaxAge:         600,
	}
	origins := slices.Clone(rn.cfg.origins)
	switch {
	case rn.has("cors-reflect"):
		opts.AllowOriginFunc = func(string) bool { return true }
	case rn.has("cors-allowed-origins"):
		opts.AllowedOrigins = origins
	default:
		// An exact match: rs/cors reads an empty AllowedOrigins as "*", and
		// folds the case of the ones it is given.
		opts.AllowOriginFunc = func(o string) bool { return slices.Contains(origins, o) }
	}
	return cors.New(opts).Handler
}

func (rn *runner) routes() http.Handler {
	r := chi.NewRouter()
	c := rn.corsHandler()
	var perRoute []func(http.Handler) http.Handler
	if rn.has("cors-route-only") {
		perRoute = append(perRoute, c)
	} else {
		r.Use(c)
	}
	r.Use(middleware.GetHead)
	if !rn.has("chi-defaults") {
		r.NotFound(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != prefix && !strings.HasPrefix(r.URL.Path, prefix+"/") {
				http.NotFound(w, r)
				return
			}
			refuse(w, 404, "not_found", fmt.Sprintf("No %s %s here.", r.Method, r.URL.Path), nil)
		})
		r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
			allow := "GET, HEAD"
			if strings.HasSuffix(r.URL.Path, "/run") || strings.HasSuffix(r.URL.Path, "/stream") {
				allow = "POST"
			}
			w.Header().Set("Allow", allow)
			refuse(w, 405, "bad_request", fmt.Sprintf("%s is not served on %s.", r.Method, r.URL.Path), nil)
		})
	}
	posts := perRoute
	if rn.has("allow-content-type") {
		posts = append(slices.Clone(perRoute), middleware.AllowContentType("application/json"))
	}
	r.Route(prefix, func(r chi.Router) {
		r.Use(rn.requireAuth)
		r.With(perRoute...).Get("/describe", rn.describe)
		r.With(perRoute...).Get("/status", rn.status)
		r.With(posts...).Post("/run", rn.run)
		r.With(posts...).Post("/stream", rn.stream)
	})
	return r
}

func (rn *runner) requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rn.cfg.authToken != "" && r.Header.Get("Authorization") != "Bearer "+rn.cfg.authToken {
			w.Header().Set("WWW-Authenticate", "Bearer")
			refuse(w, 401, "unauthorized", "This runner requires its own bearer token.", nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ---- describe and status ----

func (rn *runner) missing() []string {
	if rn.cfg.credential != "" && os.Getenv(rn.cfg.credential) == "" {
		return []string{rn.cfg.credential}
	}
	return []string{}
}

func (rn *runner) describe(w http.ResponseWriter, r *http.Request) {
	creds := []map[string]any{}
	if rn.cfg.credential != "" {
		creds = append(creds, map[string]any{"env": rn.cfg.credential, "purpose": "Stands in for a model provider key."})
	}
	writeJSON(w, 200, map[string]any{
		"postern":      "0.1",
		"agent":        agentInfo,
		"inputs":       inputDecls,
		"output":       map[string]any{"type": "text", "example": "hello hello"},
		"capabilities": map[string]any{"tools": []string{}, "write_tools": []string{}},
		"credentials":  creds,
		"examples":     []map[string]any{{"inputs": map[string]any{"text": "hello", "times": 2}, "output": "hello hello"}},
	})
}

func (rn *runner) status(w http.ResponseWriter, r *http.Request) {
	missing := rn.missing()
	state := "ready"
	if rn.inFlight.Load() > 0 {
		state = "running"
	} else if rn.cfg.level >= 2 && len(missing) > 0 {
		state = "degraded"
	}
	body := map[string]any{
		"postern":     "0.1",
		"level":       rn.cfg.level,
		"state":       state,
		"agent":       map[string]any{"id": agentInfo["id"], "version": agentInfo["version"]},
		"entitlement": map[string]any{"state": "not_required"},
	}
	if rn.cfg.credential != "" {
		body["credentials"] = map[string]any{"satisfied": len(missing) == 0, "missing": missing}
	}
	if rn.cfg.level >= 2 {
		limits := map[string]any{"max_concurrent_runs": rn.cfg.maxConcurrent}
		if rn.cfg.maxRunSeconds > 0 {
			limits["max_run_seconds"] = rn.cfg.maxRunSeconds
		}
		if rn.cfg.idempotent {
			body["idempotent_retry"] = true
			limits["idempotency_retention_seconds"] = retention
		}
		body["limits"] = limits
	}
	writeJSON(w, 200, body)
}

// ---- validation (§4.2) ----

type values struct {
	text  string
	times float64
	tone  string
}

// structInputs is what the struct-inputs mistake decodes into.
type structInputs struct {
	Text  *string  `json:"text"`
	Times *float64 `json:"times"`
	Tone  *string  `json:"tone"`
}

// validate reads the request's inputs against describe; it returns the values
// to run with and the decoded map, or the reason to refuse.
func (rn *runner) validate(raw json.RawMessage) (values, map[string]any, string) {
	v := values{times: 1, tone: "plain"}
	var decoded map[string]any
	if err := json.Unmarshal(raw, &decoded); err != nil || decoded == nil {
		return v, nil, "'inputs' must be an object"
	}
	if rn.has("struct-inputs") {
		var s structInputs
		if err := json.Unmarshal(raw, &s); err != nil {
			return v, nil, "inputs: " + err.Error()
		}
		if s.Text == nil {
			return v, nil, "required input 'text' is missing"
		}
		v.text = *s.Text
		if s.Times != nil {
			v.times = *s.Times
		}
		if s.Tone != nil {
			v.tone = *s.Tone
		}
		return v, decoded, rn.check(v)
	}
	// Keys are matched exactly: inputs is keyed by describe's keys.
	text := func(key string, dst *string, required bool) string {
		switch t := decoded[key].(type) {
		case nil:
			if required {
				return "required input '" + key + "' is missing"
			}
		case string:
			*dst = t
		default:
			return "input '" + key + "' must be a string"
		}
		return ""
	}
	if msg := text("text", &v.text, true); msg != "" {
		return v, nil, msg
	}
	if msg := text("tone", &v.tone, false); msg != "" {
		return v, nil, msg
	}
	switch t := decoded["times"].(type) {
	case nil:
	case float64:
		v.times = t
	default:
		return v, nil, "input 'times' must be a number"
	}
	return v, decoded, rn.check(v)
}

func (rn *runner) check(v values) string {
	switch {
	case utf8.RuneCountInString(v.text) > 200:
		return "input 'text' is longer than 200 characters"
	case v.times < 1 || v.times > 3:
		return "input 'times' must be between 1 and 3"
	case v.tone != "plain" && v.tone != "loud":
		return "input 'tone' must be one of plain, loud"
	}
	return ""
}

// canonical is the decoded inputs re-encoded: encoding/json sorts map keys,
// so equal maps compare equal however the client ordered them (§4.2).
func canonical(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// ---- run and stream ----

type job struct {
	v     values
	canon string
	key   string
}

// admit applies §4.6 in order (the level, the media type, the inputs, the
// credential), then a key already answered, then capacity. It writes the
// refusal itself and returns nil, or returns the entry to replay, or the job.
func (rn *runner) admit(w http.ResponseWriter, r *http.Request, level int) (*job, *answer) {
	if rn.cfg.level < level {
		refuse(w, 501, "not_implemented", fmt.Sprintf("This runner serves Level %d; this verb needs Level %d.", rn.cfg.level, level), nil)
		return nil, nil
	}
	if !rn.has("no-media-check") && !rn.has("allow-content-type") {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			refuse(w, 400, "bad_request", "The body must be application/json.", nil)
			return nil, nil
		}
	}
	var body struct {
		Inputs json.RawMessage `json:"inputs"`
	}
	raw, err := readBody(w, r)
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		if rn.has("http-error") {
			http.Error(w, "bad JSON: "+err.Error(), http.StatusBadRequest)
		} else {
			refuse(w, 400, "bad_request", "The body could not be read: "+err.Error(), nil)
		}
		return nil, nil
	}
	if len(body.Inputs) == 0 {
		refuse(w, 400, "bad_request", "The body must carry an 'inputs' object.", nil)
		return nil, nil
	}
	v, decoded, msg := rn.validate(body.Inputs)
	if msg != "" {
		refuse(w, 400, "bad_request", msg, nil)
		return nil, nil
	}
	if missing := rn.missing(); len(missing) > 0 {
		refuse(w, 424, "missing_credential", "Set "+strings.Join(missing, ", ")+" in the runner's environment.", map[string]any{"missing": missing})
		return nil, nil
	}
	j := &job{v: v, canon: canonical(decoded)}
	if rn.cfg.idempotent {
		j.key = r.Header.Get("Idempotency-Key")
	}
	if j.key != "" {
		rn.mu.Lock()
		e, ok := rn.answered[j.key]
		if ok && time.Now().After(e.expires) {
			delete(rn.answered, j.key)
			ok = false
		}
		rn.mu.Unlock()
		if ok {
			if e.inputs != j.canon {
				refuse(w, 409, "idempotency_conflict", "This Idempotency-Key was answered for other inputs.", nil)
				return nil, nil
			}
			return nil, &e.ans
		}
	}
	if rn.inFlight.Add(1) > int64(rn.cfg.maxConcurrent) {
		rn.inFlight.Add(-1)
		refuse(w, 503, "unavailable", "The runner is at its limit of concurrent runs.", nil)
		return nil, nil
	}
	return j, nil
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, 1<<20))
	return buf.Bytes(), err
}

func (rn *runner) newRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("run-%x-%d-%s", time.Now().UnixMilli(), rn.seq.Add(1), hex.EncodeToString(b))
}

var errAborted = errors.New("aborted")

// execute runs the admitted job (already counted in flight) under the time
// limit and the caller's context; emit receives its events. It returns nil
// when the caller went away.
func (rn *runner) execute(ctx context.Context, j *job, emit func(event string, data any)) *answer {
	defer rn.inFlight.Add(-1)
	if rn.cfg.maxRunSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, time.Duration(rn.cfg.maxRunSeconds)*time.Second, context.DeadlineExceeded)
		defer cancel()
	}
	runID := rn.newRunID()
	emit("start", map[string]any{"run_id": runID})
	text, err := rn.agent(ctx, runID, j.v, emit)
	var a answer
	switch {
	case err == nil:
		a = answer{runID, 200, map[string]any{"postern": "0.1", "run_id": runID, "output": map[string]any{"type": "text", "value": text},
			"usage": map[string]any{"input_tokens": 0, "output_tokens": 0, "cost_usd": 0}}}
	case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		a = answer{runID, 504, envelope("run_timeout", fmt.Sprintf("The run reached %d s and was stopped.", rn.cfg.maxRunSeconds),
			map[string]any{"max_run_seconds": rn.cfg.maxRunSeconds})}
	default:
		return nil
	}
	if j.key != "" {
		rn.mu.Lock()
		if _, ok := rn.answered[j.key]; !ok {
			rn.answered[j.key] = keyEntry{inputs: j.canon, ans: a, expires: time.Now().Add(retention * time.Second)}
		}
		rn.mu.Unlock()
	}
	return &a
}

func (rn *runner) noteStart(runID string) {
	name := os.Getenv("POSTERN_START_LOG")
	if name == "" {
		return
	}
	rn.startMu.Lock()
	defer rn.startMu.Unlock()
	if f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, runID)
		f.Close()
	}
}

func (rn *runner) agent(ctx context.Context, runID string, v values, emit func(string, any)) (string, error) {
	rn.noteStart(runID)
	word := v.text
	if v.tone == "loud" {
		word = strings.ToUpper(word)
	}
	var parts []string
	for i := 0; i < int(v.times); i++ {
		if i == 0 {
			parts = append(parts, word)
		} else {
			parts = append(parts, " "+word)
		}
	}
	t0 := time.Now()
	emit("step", map[string]any{"name": "echo", "status": "started"})
	pause := time.Duration(rn.cfg.agentMs) * time.Millisecond / time.Duration(len(parts)+1)
	sleep := func() error {
		select {
		case <-ctx.Done():
			return errAborted
		case <-time.After(pause):
			return nil
		}
	}
	for _, p := range parts {
		if err := sleep(); err != nil {
			return "", err
		}
		emit("delta", map[string]any{"text": p})
	}
	if err := sleep(); err != nil {
		return "", err
	}
	emit("step", map[string]any{"name": "echo", "status": "finished", "latency_ms": time.Since(t0).Milliseconds()})
	return strings.Join(parts, ""), nil
}

func (rn *runner) run(w http.ResponseWriter, r *http.Request) {
	j, replay := rn.admit(w, r, 2)
	if replay != nil {
		writeJSON(w, replay.status, replay.body)
		return
	}
	if j == nil {
		return
	}
	if a := rn.execute(r.Context(), j, func(string, any) {}); a != nil {
		writeJSON(w, a.status, a.body)
	}
}

// sseWriter writes events and flushes each as it completes (§4.3).
type sseWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	flush func() error
	last  time.Time
}

func (s *sseWriter) event(event string, data any) {
	b, _ := json.Marshal(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", event, b)
	_ = s.flush()
	s.last = time.Now()
}

// comment keeps a silent stream open (§4.3).
func (s *sseWriter) comment() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.last) >= 500*time.Millisecond {
		fmt.Fprint(s.w, ": still working\n\n")
		_ = s.flush()
		s.last = time.Now()
	}
}

func (rn *runner) stream(w http.ResponseWriter, r *http.Request) {
	j, replay := rn.admit(w, r, 3)
	if j == nil && replay == nil {
		return
	}
	ctx := r.Context()
	var out *sseWriter
	if rn.has("hijack-sse") {
		conn, bufrw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			refuse(w, 500, "agent_error", "cannot stream: "+err.Error(), nil)
			return
		}
		defer conn.Close()
		bufrw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")
		out = &sseWriter{w: bufrw.Writer, flush: bufrw.Flush}
		// A hijacked connection's context is not cancelled by the server:
		// watch for the peer going away ourselves.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.Background())
		defer cancel()
		go func() {
			_, _ = bufrw.Reader.ReadByte()
			cancel()
		}()
	} else {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		bw := bufio.NewWriter(w)
		out = &sseWriter{w: bw, flush: func() error {
			if err := bw.Flush(); err != nil {
				return err
			}
			return rc.Flush()
		}}
		_ = out.flush()
	}
	if replay != nil {
		out.event("start", map[string]any{"run_id": replay.runID})
		rn.finish(out, replay)
		return
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				out.comment()
			}
		}
	}()
	a := rn.execute(ctx, j, out.event)
	close(done)
	if a != nil {
		rn.finish(out, a)
	}
}

func (rn *runner) finish(out *sseWriter, a *answer) {
	if a.status == 200 {
		out.event("done", a.body)
	} else {
		out.event("error", a.body)
	}
}
