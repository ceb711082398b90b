package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/r3labs/sse/v2"
)

// SSEEvent is one event of a text/event-stream body, as the HTML Living
// Standard's parsing rules build it (§4.3 names that grammar), with what a
// lenient client would throw away kept: comments, id:, retry:, unknown
// fields, how many data: lines the payload spanned, and whether the event
// was terminated by a blank line.
type SSEEvent struct {
	Name       string   // the event: field; "" means "message"
	Data       string   // the data: lines joined with "\n"
	DataLines  int      // how many data: lines carried the payload
	ID         *string  // the last id: field, where one was sent
	Retry      *string  // the last retry: field, where one was sent
	Comments   []string // lines beginning ':'
	Unknown    []string // fields the format does not define
	Terminated bool     // a blank line ended the event
	Raw        string   // the event's text, for evidence
	// At is when the event's blank line arrived, measured from sending the
	// request (Client.Stream); zero for a body parsed whole (ParseSSE).
	// Events that arrive in one read share a time.
	At time.Duration
}

// SSEStream is a whole stream, read to a bounded end.
type SSEStream struct {
	Events []SSEEvent
	// Comments seen outside any event (a block of comment lines only).
	Comments []string
	// Err is set when the stream could not be read to its end: a cap
	// (ErrStreamTooLong, ErrEventTooLarge), or, from Client.Stream, the
	// transport (the Exchange's Err). Events then holds every event that
	// arrived whole before that; a fragment after the last blank line is
	// dropped, because the checker, not the runner, cut it short.
	Err error
}

// ErrEventTooLarge is reported for an event larger than the reader buffers.
var ErrEventTooLarge = errors.New("an event exceeds the size the checker buffers")

// ErrStreamTooLong is reported for a stream cut at its cap on bytes or on
// events (see StreamLimits).
var ErrStreamTooLong = errors.New("the stream runs past the checker's cap on bytes or events")

// ParseSSE reads a text/event-stream body strictly.
//
// Event boundaries come from r3labs/sse's EventStreamReader, which splits on
// the blank line in each of its CR/LF spellings and bounds the buffer. Its
// own event parser is not used: it drops comments and unknown fields,
// forgives a final event with no blank line after it, and trims what it
// reads, and a conformance checker has to see exactly those things. So
// each chunk's lines are parsed here, by the standard's rules, and a final
// chunk with no blank line after it is reported as unterminated rather
// than dispatched.
//
// One leading U+FEFF byte order mark is dropped first, as the format's
// decoding step does; a second one is kept as part of the first line.
//
// Client.Stream parses the same way as the answer arrives; ParseSSE is
// for a body already read whole.
func ParseSSE(body []byte, maxEvent int) SSEStream {
	var b sseBuilder
	var tail bodyBuf
	tail.remember(body[max(0, len(body)-4):])
	rd := sse.NewEventStreamReader(bytes.NewReader(body), maxEvent)
	how := endEOF
	for {
		chunk, err := rd.ReadEvent()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				b.out.Err = ErrEventTooLarge
				how = endWhole
			}
			break
		}
		b.add(b.parse(chunk))
	}
	b.end(how, tail.endsBlank())
	return b.out
}

// How a stream's reading ended, which decides what its last chunk was.
const (
	// endEOF: the stream ended. Its last chunk is terminated only where
	// the stream ended on a blank line.
	endEOF = iota
	// endWhole: reading stopped between chunks (an oversized event, or a
	// cap on events): every chunk kept was followed by a blank line.
	endWhole
	// endCut: reading stopped mid-stream (a cap on bytes, the deadline, a
	// broken connection). A last chunk with no blank line after it is a
	// fragment, and is dropped.
	endCut
)

// sseBuilder builds an SSEStream chunk by chunk. Only the last chunk can
// lack its blank line, so each chunk is taken as terminated and end
// settles the last one.
type sseBuilder struct {
	out    SSEStream
	chunks int
	cost   int64 // the bytes the parsed stream holds, roughly (see parsed.cost)
	// what the last chunk added, to settle or undo it
	lastEvent    bool
	lastCost     int64
	prevComments int
}

// parsed is one chunk, parsed and not yet added.
type parsed struct {
	ev          SSEEvent
	commentOnly bool
	cost        int64
}

// sseEventOverhead is what an SSEEvent costs beyond its strings: the
// struct, and the id:/retry: values' boxes.
const sseEventOverhead = 192

func (b *sseBuilder) parse(chunk []byte) parsed {
	text := string(chunk)
	if b.chunks == 0 {
		text = strings.TrimPrefix(text, "\uFEFF")
	}
	ev := parseEvent(text)
	ev.Terminated = true
	p := parsed{ev: ev}
	p.commentOnly = ev.Name == "" && ev.DataLines == 0 && ev.ID == nil && ev.Retry == nil && len(ev.Unknown) == 0
	// Raw is the one copy of the text: Comments, Unknown, Name and a
	// one-line Data are substrings of it; a Data of several lines is a copy.
	p.cost = int64(len(text)) + 16*int64(len(ev.Comments)+len(ev.Unknown))
	if !p.commentOnly {
		p.cost += sseEventOverhead
		if ev.DataLines > 1 {
			p.cost += int64(len(ev.Data))
		}
	}
	return p
}

func (b *sseBuilder) add(p parsed) {
	b.chunks++
	b.cost += p.cost
	b.lastCost = p.cost
	b.prevComments = len(b.out.Comments)
	b.lastEvent = !p.commentOnly
	if p.commentOnly {
		b.out.Comments = append(b.out.Comments, p.ev.Comments...)
		return
	}
	b.out.Events = append(b.out.Events, p.ev)
}

// end settles the last chunk; endsBlank is whether the bytes read ended
// on a blank line.
func (b *sseBuilder) end(how int, endsBlank bool) {
	if b.chunks == 0 || how == endWhole || endsBlank {
		return
	}
	switch {
	case how == endEOF && b.lastEvent:
		b.out.Events[len(b.out.Events)-1].Terminated = false
	case how == endCut && b.lastEvent:
		b.out.Events[len(b.out.Events)-1] = SSEEvent{} // let the fragment's text go
		b.out.Events = b.out.Events[:len(b.out.Events)-1]
		b.cost -= b.lastCost
	case how == endCut:
		b.out.Comments = b.out.Comments[:b.prevComments]
		b.cost -= b.lastCost
	}
}

func parseEvent(text string) SSEEvent {
	ev := SSEEvent{Raw: text}
	var data strings.Builder
	first := ""
	forEachLine(text, func(line string) {
		if line == "" {
			return
		}
		if strings.HasPrefix(line, ":") {
			ev.Comments = append(ev.Comments, line[1:])
			return
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ") // one space, and only one, is stripped
		}
		switch field {
		case "event":
			ev.Name = value
		case "data":
			// A one-line payload stays a substring of Raw; only a payload
			// of several lines is joined into a copy.
			switch ev.DataLines {
			case 0:
				first = value
			case 1:
				data.WriteString(first)
				fallthrough
			default:
				data.WriteByte('\n')
				data.WriteString(value)
			}
			ev.DataLines++
		case "id":
			v := value
			ev.ID = &v
		case "retry":
			v := value
			ev.Retry = &v
		default:
			ev.Unknown = append(ev.Unknown, line)
		}
	})
	if ev.DataLines <= 1 {
		ev.Data = first
	} else {
		ev.Data = data.String()
	}
	return ev
}

// forEachLine calls f on each line of s, split on CRLF, LF or CR (the
// three line ends the format allows), without building a list of them: an
// event of many short lines must not cost a slice header per line.
func forEachLine(s string, f func(string)) {
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			f(s)
			return
		}
		f(s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
}

// endsBlank reports whether s (the last bytes of a stream) ends with a
// blank line in one of the format's spellings.
func endsBlank(s string) bool {
	return strings.HasSuffix(s, "\n\n") || strings.HasSuffix(s, "\r\r") || strings.HasSuffix(s, "\r\n\r\n") ||
		strings.HasSuffix(s, "\n\r\n") || strings.HasSuffix(s, "\r\n\n")
}
