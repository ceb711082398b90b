// Package scripted holds the client check's own runners: one Postern
// runner per scenario, on a loopback port of its own, answering as its
// Script says and keeping a log of every request the client under test
// sent. Each is the checker's runner, as checks/entitlement/scripted is
// the walk's own distributor: it validates a run's request as a conforming
// runner must (§4.6: the level, then the media type, then the inputs
// against describe) before it answers with the script, so a client whose
// request is wrong is refused as any runner would refuse it, and the log
// says so.
//
// The runner is built to face a client that may be hostile: the request
// body it reads, the headers, and the log it keeps are capped, and Close
// ends every request in flight.
package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sigrix-io/postern-conformance/wire"
	"github.com/sigrix-io/postern-conformance/wire/protocol"
)

// Caps on what one request costs the runner and its log.
const (
	// MaxRequestBody is the most of a request body the runner reads: a
	// run's inputs are a few hundred bytes.
	MaxRequestBody = 256 << 10
	// KeptBody is the most of a request or response body a log entry keeps.
	KeptBody = 16 << 10
	// LogCap is how many requests the log keeps; later ones are counted.
	LogCap = 64
	// maxHeaderBytes caps the request headers read.
	maxHeaderBytes = 16 << 10
)

// Script is what one scripted runner answers.
type Script struct {
	// Level is the conformance level the runner serves (§3): a verb above
	// it is refused 501 not_implemented, whatever status says.
	Level int
	// Describe and Status are the documents served, exactly as sent.
	Describe, Status []byte
	// Run and Stream are what a run and a stream request answer once the
	// request is valid.
	Run, Stream Reply
}

// Reply is one answer: a status, a media type and a body. A stream's
// body is written in Chunks, each flushed as it is written, as a runner
// writes each event as soon as it is complete (§4.3).
type Reply struct {
	Status      int
	ContentType string
	Body        []byte
	Chunks      [][]byte
	// Drop ends the connection once the chunks are written, with no
	// proper end to the body: a stream that drops before done.
	Drop bool
}

// Request is one request the runner received, with what it answered.
type Request struct {
	// Ex is the exchange as a report draws it: the client's request
	// (method, URL, headers, body) and the runner's answer.
	Ex *wire.Exchange
	// Verb is the verb addressed ("" for a path outside the four).
	Verb string
	// Refused says why the runner refused a run or stream request for
	// what the request itself said (its media type, its body, its inputs),
	// as any conforming runner would; "" where it did not.
	Refused string
	// Seq numbers the requests in the order they arrived, from 1.
	Seq int
}

// Runner is a running scripted runner.
type Runner struct {
	// URL is the runner's origin, http://127.0.0.1:<port>.
	URL string

	script Script
	inputs []input
	srv    *http.Server
	done   chan struct{}
	// conns counts the connections open: Close waits for every one to
	// end, so that the log it leaves holds every request that came.
	conns sync.WaitGroup

	mu      sync.Mutex
	log     []Request
	seq     int
	dropped int
}

// Start serves s on an ephemeral loopback port. Close it when done.
func Start(s Script) (*Runner, error) {
	ins, err := inputsOf(s.Describe)
	if err != nil {
		return nil, fmt.Errorf("scripted runner: its own describe: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Runner{URL: "http://" + ln.Addr().String(), script: s, inputs: ins, done: make(chan struct{})}
	r.srv = &http.Server{
		Handler:           http.HandlerFunc(r.serve),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		// Counted from Serve's own goroutine, before Close can wait.
		ConnState: func(_ net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				r.conns.Add(1)
			case http.StateHijacked, http.StateClosed:
				r.conns.Done()
			}
		},
	}
	// One request a connection: a client holds no idle connection open
	// that could keep its process from exiting once it is done.
	r.srv.SetKeepAlivesEnabled(false)
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Close stops the runner: the listener and every connection, and waits for
// the requests being answered to be logged. The log stays readable.
// Closing twice is harmless.
func (r *Runner) Close() {
	_ = r.srv.Close()
	<-r.done
	r.conns.Wait()
}

// Log is every request kept, in order of arrival, and how many more came
// past LogCap.
func (r *Runner) Log() ([]Request, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.log...), r.dropped
}

func (r *Runner) record(q Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	q.Seq = r.seq
	if len(r.log) >= LogCap {
		r.dropped++
		return
	}
	r.log = append(r.log, q)
}

// serve answers one request and logs it.
func (r *Runner) serve(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, MaxRequestBody))
	ex := &wire.Exchange{Method: req.Method, URL: r.URL + clip(req.RequestURI, 2048), ReqHeader: req.Header.Clone(),
		ReqBody: keep(body), Note: "sent by the client under test", Proto: "HTTP/1.1", Sent: start, Cap: KeptBody,
		Unreplayable: unreplayable}
	rec := &recorder{w: w, header: http.Header{}}
	q := Request{Ex: ex}
	q.Verb, q.Refused = r.answer(rec, req, body)
	rec.flush()
	ex.Status, ex.Header, ex.Body, ex.Truncated = rec.status, rec.header, keep(rec.body.Bytes()), rec.body.Len() > KeptBody
	ex.Elapsed = time.Since(start)
	if rec.drop {
		ex.Err = errDropped
	}
	r.record(q)
	if rec.drop {
		panic(http.ErrAbortHandler) // the connection ends here, mid-body
	}
}

// unreplayable is why no curl line reproduces what a client sent
// (wire.Exchange.Reproduce): the request was the client's, to this
// runner, which is gone once the check ends; running the scenario again
// shows it again.
const unreplayable = "the client under test sent this request to the checker's scripted runner, which is gone once the check ends; running the scenario again (postern-conformance client --scenario) shows it again"

// errDropped marks, in the log, an answer the runner dropped mid-body.
var errDropped = errors.New("the runner dropped the connection before the body ended, as its script says")

// answer writes the answer to req and returns the verb addressed and, for
// a request refused for what it said, why.
func (r *Runner) answer(w *recorder, req *http.Request, body []byte) (verb, refused string) {
	path, ok := strings.CutPrefix(req.URL.Path, protocol.Prefix)
	if !ok {
		w.plain(http.StatusNotFound, "not a Postern path")
		return "", ""
	}
	if !protocol.IsVerb(path) {
		w.envelope(http.StatusNotFound, "not_found", "no such path under "+protocol.Prefix)
		return "", ""
	}
	verb = path
	if req.Method == http.MethodOptions {
		// No origin is configured: a preflight is answered, and admits
		// nothing (§2.3).
		w.status = http.StatusNoContent
		return verb, ""
	}
	want := http.MethodGet
	if protocol.Posts(verb) {
		want = http.MethodPost
	}
	if req.Method != want {
		w.header.Set("Allow", want+", OPTIONS")
		w.envelope(http.StatusMethodNotAllowed, "bad_request", verb+" takes "+want)
		return verb, ""
	}
	switch verb {
	case protocol.Describe:
		w.json(http.StatusOK, r.script.Describe)
		return verb, ""
	case protocol.Status:
		w.json(http.StatusOK, r.script.Status)
		return verb, ""
	}
	// §4.6: the level first, then the media type, then the inputs.
	if protocol.LevelOf(verb) > r.script.Level {
		w.envelope(http.StatusNotImplemented, "not_implemented", fmt.Sprintf("%s is above this runner's level (%d)", verb, r.script.Level))
		return verb, ""
	}
	if why := r.invalid(req.Header.Get("Content-Type"), body); why != "" {
		w.envelope(http.StatusBadRequest, "bad_request", why)
		return verb, why
	}
	reply := r.script.Run
	if verb == protocol.Stream {
		reply = r.script.Stream
	}
	w.reply(reply)
	return verb, ""
}

// invalid says why a run or stream request is refused for what it says,
// as a conforming runner refuses it, or "".
func (r *Runner) invalid(contentType string, body []byte) string {
	if !protocol.IsJSON(contentType) {
		if contentType == "" {
			return "the body carries no Content-Type; a run's body is application/json (§2.3)"
		}
		return fmt.Sprintf("the body is labelled %q, not application/json (§2.3)", clip(contentType, 80))
	}
	var req map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil || dec.More() || req == nil {
		return "the body is not a JSON object"
	}
	inputs, ok := req["inputs"].(map[string]any)
	if !ok {
		return "inputs is not an object keyed by describe's input keys (§4.2)"
	}
	for _, in := range r.inputs {
		if why := in.check(inputs[in.Key]); why != "" {
			return "inputs." + in.Key + ": " + why
		}
	}
	return ""
}

// input is one input describe declares, as the runner validates it.
type input struct {
	Key, Type  string
	Required   bool
	Validation map[string]any
}

// inputsOf reads describe's inputs.
func inputsOf(describe []byte) ([]input, error) {
	var d struct {
		Inputs []input `json:"inputs"`
	}
	dec := json.NewDecoder(bytes.NewReader(describe))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	return d.Inputs, nil
}

// UnmarshalJSON reads a declaration leniently.
func (in *input) UnmarshalJSON(b []byte) error {
	var raw struct {
		Key        string         `json:"key"`
		Type       string         `json:"type"`
		Required   bool           `json:"required"`
		Validation map[string]any `json:"validation"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	*in = input{Key: raw.Key, Type: raw.Type, Required: raw.Required, Validation: raw.Validation}
	return nil
}

// check says why v is not a valid value of the input, or "": a required
// input absent or null is refused, a value of the wrong shape or outside a
// recognised validation member too; members it does not recognise are
// ignored (§4.1.1).
func (in input) check(v any) string {
	if v == nil {
		if in.Required {
			return "required, and absent or null"
		}
		return ""
	}
	switch in.Type {
	case "number":
		n, ok := wire.Number(v)
		if !ok {
			return "a number input, sent as " + kind(v)
		}
		if lo, ok := wire.Number(in.Validation["min"]); ok && n < lo {
			return fmt.Sprintf("%v is below the minimum %v", n, lo)
		}
		if hi, ok := wire.Number(in.Validation["max"]); ok && n > hi {
			return fmt.Sprintf("%v is above the maximum %v", n, hi)
		}
		return ""
	}
	// text, select, and a type a runner of a later version declares: a string.
	s, ok := v.(string)
	if !ok {
		return "a " + in.Type + " input carries a string, sent as " + kind(v)
	}
	if n, ok := wire.Number(in.Validation["max_length"]); ok && float64(utf8.RuneCountInString(s)) > n {
		return fmt.Sprintf("longer than max_length %v", n)
	}
	if opts, ok := in.Validation["options"].([]any); ok && in.Type == "select" {
		for _, o := range opts {
			if o == s {
				return ""
			}
		}
		return fmt.Sprintf("%q is not one of the options", clip(s, 40))
	}
	if p, ok := in.Validation["pattern"].(string); ok {
		if re, err := regexp.Compile(p); err == nil && !re.MatchString(s) {
			return "does not match the pattern"
		}
	}
	return ""
}

func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if _, ok := wire.Number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// recorder writes an answer and keeps a bounded copy of it.
type recorder struct {
	w      http.ResponseWriter
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
	drop   bool
}

func (w *recorder) json(status int, body []byte) {
	w.header.Set("Content-Type", protocol.JSONUTF8)
	w.status = status
	w.write(body)
}

func (w *recorder) envelope(status int, code, message string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": message, "detail": nil}})
	w.json(status, b)
}

func (w *recorder) plain(status int, text string) {
	w.header.Set("Content-Type", "text/plain; charset=utf-8")
	w.status = status
	w.write([]byte(text + "\n"))
}

// reply writes a scripted answer: its body at once, or its chunks each
// flushed as it goes.
func (w *recorder) reply(rp Reply) {
	if rp.ContentType != "" {
		w.header.Set("Content-Type", rp.ContentType)
	}
	w.status = rp.Status
	if len(rp.Chunks) == 0 {
		w.write(rp.Body)
		return
	}
	f, _ := w.w.(http.Flusher)
	for _, c := range rp.Chunks {
		w.write(c)
		if f != nil {
			f.Flush()
		}
	}
	w.drop = rp.Drop
}

func (w *recorder) write(b []byte) {
	if !w.wrote {
		w.wrote = true
		for k, vs := range w.header {
			w.w.Header()[k] = vs
		}
		w.w.WriteHeader(w.status)
	}
	_, _ = w.w.Write(b)
	if room := KeptBody + 1 - w.body.Len(); room > 0 {
		w.body.Write(b[:min(room, len(b))])
	}
}

// flush writes the head of an answer that carried no body.
func (w *recorder) flush() {
	if !w.wrote {
		w.write(nil)
	}
}

func keep(b []byte) []byte {
	if len(b) > KeptBody {
		b = b[:KeptBody]
	}
	return append([]byte(nil), b...)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// InputProblems judges a run's inputs against describe as the runner does:
// bad says, per input, why a runner refuses its value ("prompt: required,
// and absent or null"); extra lists the keys describe does not declare.
func InputProblems(describe []byte, inputs map[string]any) (bad, extra []string) {
	ins, err := inputsOf(describe)
	if err != nil {
		return nil, nil
	}
	declared := map[string]bool{}
	for _, in := range ins {
		declared[in.Key] = true
		if why := in.check(inputs[in.Key]); why != "" {
			bad = append(bad, in.Key+": "+why)
		}
	}
	for k := range inputs {
		if !declared[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	return bad, extra
}
