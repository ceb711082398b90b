package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"

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
}

// SSEStream is a whole stream, read to a bounded end.
type SSEStream struct {
	Events []SSEEvent
	// Comments seen outside any event (a block of comment lines only).
	Comments []string
	// Err is set when the stream could not be read to its end: the byte
	// cap, or an event too large to buffer.
	Err error
}

// ErrEventTooLarge is reported for an event larger than the reader buffers.
var ErrEventTooLarge = errors.New("an event exceeds the size the checker buffers")

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
func ParseSSE(body []byte, maxEvent int) SSEStream {
	var out SSEStream
	body = bytes.TrimPrefix(body, []byte("\uFEFF"))
	tail := &tailReader{r: bytes.NewReader(body)}
	rd := sse.NewEventStreamReader(tail, maxEvent)
	var chunks [][]byte
	for {
		chunk, err := rd.ReadEvent()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				out.Err = ErrEventTooLarge
			}
			break
		}
		chunks = append(chunks, append([]byte(nil), chunk...))
	}
	for i, chunk := range chunks {
		ev := parseEvent(string(chunk))
		ev.Terminated = i < len(chunks)-1 || tail.endsBlank()
		if ev.Name == "" && ev.DataLines == 0 && ev.ID == nil && ev.Retry == nil && len(ev.Unknown) == 0 {
			out.Comments = append(out.Comments, ev.Comments...)
			continue
		}
		out.Events = append(out.Events, ev)
	}
	return out
}

func parseEvent(text string) SSEEvent {
	ev := SSEEvent{Raw: text}
	var data []string
	for _, line := range splitLines(text) {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, ":") {
			ev.Comments = append(ev.Comments, line[1:])
			continue
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ") // one space, and only one, is stripped
		}
		switch field {
		case "event":
			ev.Name = value
		case "data":
			data = append(data, value)
		case "id":
			v := value
			ev.ID = &v
		case "retry":
			v := value
			ev.Retry = &v
		default:
			ev.Unknown = append(ev.Unknown, line)
		}
	}
	ev.DataLines = len(data)
	ev.Data = strings.Join(data, "\n")
	return ev
}

// splitLines splits on CRLF, LF or CR, the three line ends the format allows.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

// tailReader remembers the last bytes read, to tell whether the stream
// ended on a blank line.
type tailReader struct {
	r    io.Reader
	last []byte
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.last = append(t.last, p[:n]...)
		if len(t.last) > 4 {
			t.last = t.last[len(t.last)-4:]
		}
	}
	return n, err
}

func (t *tailReader) endsBlank() bool {
	s := string(t.last)
	return strings.HasSuffix(s, "\n\n") || strings.HasSuffix(s, "\r\r") || strings.HasSuffix(s, "\r\n\r\n") ||
		strings.HasSuffix(s, "\n\r\n") || strings.HasSuffix(s, "\r\n\n")
}
