package scripted

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Event is one event of a stream, before it is framed: its name and its
// JSON payload.
type Event struct {
	Name string
	Data any
}

// Framing is how a stream's events are written: each a shape the
// text/event-stream format of the HTML Living Standard admits (§4.3).
type Framing struct {
	// EOL ends every line: "\n" where empty, "\r\n" or "\r".
	EOL string
	// NoSpace writes "event:x" and "data:y", without the space the format
	// lets a field's value start with.
	NoSpace bool
	// Multiline spreads each payload over several data: lines (the JSON
	// indented, one data: line per line of it).
	Multiline bool
	// Before are lines written before every event's first field; Inside
	// are lines written between its event: line and its data: lines.
	// Comment lines (":…"), id: lines or unknown fields go here.
	Before, Inside func(i int) []string
	// Preamble are lines written once, before the first event.
	Preamble []string
}

// Frame writes events as f says, one chunk per event (a preamble its own).
func (f Framing) Frame(events []Event) [][]byte {
	eol := f.EOL
	if eol == "" {
		eol = "\n"
	}
	sep := ": "
	if f.NoSpace {
		sep = ":"
	}
	var chunks [][]byte
	if len(f.Preamble) > 0 {
		chunks = append(chunks, []byte(strings.Join(f.Preamble, eol)+eol))
	}
	for i, ev := range events {
		var b bytes.Buffer
		line := func(s string) { b.WriteString(s + eol) }
		if f.Before != nil {
			for _, l := range f.Before(i) {
				line(l)
			}
		}
		line("event" + sep + ev.Name)
		if f.Inside != nil {
			for _, l := range f.Inside(i) {
				line(l)
			}
		}
		for _, d := range f.dataLines(ev.Data) {
			line("data" + sep + d)
		}
		line("")
		chunks = append(chunks, b.Bytes())
	}
	return chunks
}

func (f Framing) dataLines(v any) []string {
	if raw, ok := v.(json.RawMessage); ok && !f.Multiline {
		return []string{string(raw)}
	}
	if f.Multiline {
		b, _ := json.MarshalIndent(v, "", "  ")
		return strings.Split(string(b), "\n")
	}
	b, _ := json.Marshal(v)
	return []string{string(b)}
}
