package wire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/r3labs/sse/v2"
)

// StreamLimits bound one event-stream read. A runner chooses how long its
// stream is, how many events it sends and how big each is, and may never
// end it; the checker reads a stream only as far as these allow, and
// judges what it read.
type StreamLimits struct {
	// MaxBytes caps the stream's bytes (the client's MaxBody when zero).
	// The parsed events hold about as much again, so a stream reserves
	// twice this from the client's body budget (and is cut shorter where
	// the budget cannot spare that).
	MaxBytes int64
	// MaxEvents caps the events kept, comment-only blocks included
	// (DefaultMaxEvents when zero): each costs a struct and slice headers
	// whatever its size, so a flood of tiny events is cut by count.
	MaxEvents int
	// MaxEvent caps one event, which the parser must buffer whole before
	// it can split it (DefaultMaxEvent when zero, and never more than the
	// byte cap).
	MaxEvent int
	// MaxTime caps the whole exchange from sending the request (the
	// client's Timeout when zero): a stream that never ends is cut here.
	MaxTime time.Duration
	// Until, where set, is asked about each event as it arrives; once it
	// says true the checker hangs up after that event (Err = ErrHungUp),
	// as a client going away mid-run does (§4.5).
	Until func(SSEEvent) bool
}

// DefaultMaxEvents is the default cap on a stream's events: a real run's
// stream is a start, some steps and deltas, and an end.
const DefaultMaxEvents = 4096

// DefaultMaxEvent is the default cap on one event: room for a done event
// carrying a large output, while a single endless event costs no more.
const DefaultMaxEvent = 256 << 10

func (c *Client) streamLimits(l StreamLimits) StreamLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = c.maxBody
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = DefaultMaxEvents
	}
	if l.MaxEvent <= 0 {
		l.MaxEvent = DefaultMaxEvent
	}
	if l.MaxTime <= 0 {
		l.MaxTime = c.timeout
	}
	return l
}

// Stream sends r and reads a 200 answer as a text/event-stream as it
// arrives, whatever its Content-Type says (the rules judge the label),
// parsing it as ParseSSE does and noting when each event arrived
// (SSEEvent.At). Any other answer is read as Do reads it, and SSE is nil.
//
// It asks as a browser does, with Accept-Encoding: gzip (unless r sets
// its own), and reads a gzip-coded answer decoded, each event timed as it
// comes out of the decoder (see coding.go); Exchange.Coding says so.
//
// The read stops at the first of: the stream's end, lim's byte or event
// cap (Truncated, SSE.Err = ErrStreamTooLong), an event over lim.MaxEvent
// (Truncated, SSE.Err = ErrEventTooLarge), lim.MaxTime (Err = ErrNoAnswer),
// the end of ctx (Err = ErrRunDeadline) or a transport failure. SSE then
// holds every event that arrived whole. Err == nil and !Truncated together
// mean the stream was read to its end, and then SSE.Err is nil.
func (c *Client) Stream(ctx context.Context, r Request, lim StreamLimits) *Exchange {
	lim = c.streamLimits(lim)
	ctx, cancel := withDeadline(ctx, lim.MaxTime)
	defer cancel()
	ex, resp, start := c.send(ctx, offerGzip(r))
	if resp == nil {
		return ex
	}
	defer resp.Body.Close()
	body, length, err := decoded(ex, resp)
	if err != nil {
		ex.Elapsed, ex.Err = time.Since(start), err
		return ex
	}
	if resp.StatusCode != http.StatusOK {
		err := c.readBody(ex, body, length)
		ex.Elapsed = time.Since(start)
		ex.Err = classify(ctx, err)
		return ex
	}
	err = c.readStream(ex, body, lim, start)
	ex.Elapsed = time.Since(start)
	ex.Err = classify(ctx, err)
	if ex.Err != nil && ex.SSE.Err == nil {
		ex.SSE.Err = ex.Err
	}
	return ex
}

// readStream parses body into ex.SSE under lim and a reservation from the
// budget: the stream's bytes (kept in ex.Body, as an excerpt where the
// stream was cut) may take half of it and the parsed events the other
// half. It returns the transport's error.
func (c *Client) readStream(ex *Exchange, body io.Reader, lim StreamLimits, start time.Time) error {
	reserved := c.budget.take(2*lim.MaxBytes, 2*c.floor)
	byteCap := reserved / 2
	maxEvent := int(min(int64(lim.MaxEvent), byteCap))
	src := &cappedTee{r: body, limit: byteCap}
	rd := sse.NewEventStreamReader(src, max(maxEvent, 1))
	var b sseBuilder
	how := endEOF
	var failed error // the transport's (or the parser's) own failure
	for {
		chunk, err := rd.ReadEvent()
		if err != nil {
			switch {
			case errors.Is(err, bufio.ErrTooLong):
				how, b.out.Err, ex.Truncated = endWhole, ErrEventTooLarge, true
			case src.truncated:
				how, b.out.Err, ex.Truncated = endCut, ErrStreamTooLong, true
			case src.err != nil && !errors.Is(src.err, io.EOF):
				// The parser's reader reports a cancelled read as a clean
				// end; src.err is what really happened.
				how, failed = endCut, src.err
			case !errors.Is(err, io.EOF):
				how, failed = endCut, err
			}
			break
		}
		p := b.parse(chunk)
		if b.chunks >= lim.MaxEvents || b.cost+p.cost > byteCap {
			how, b.out.Err, ex.Truncated = endWhole, ErrStreamTooLong, true
			break
		}
		p.ev.At = time.Since(start)
		b.add(p)
		if lim.Until != nil && lim.Until(p.ev) {
			how, failed = endWhole, ErrHungUp // between chunks: every event kept is whole
			break
		}
	}
	b.end(how, src.buf.endsBlank())
	ex.SSE = &b.out
	keep := int64(-1)
	if ex.Truncated {
		keep = KeepTruncated // as for any cut body; the events that arrived whole are kept
	}
	ex.Body, ex.Cap = src.buf.bytes(keep), byteCap
	c.budget.give(reserved - int64(len(ex.Body)) - b.cost)
	return failed
}
