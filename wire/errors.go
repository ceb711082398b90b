package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"net/textproto"
	"strings"
	"syscall"
	"time"
)

// The classes of failure an Exchange's Err falls into. ErrNoAnswer and
// ErrRunDeadline are returned bare (compare with ==); the transport
// classes wrap what went wrong, so errors.Is finds the class and
// errors.As still finds the underlying *url.Error or *net.OpError.
//
// The split between the first two is what lets a checking engine judge
// fairly: a request that outlived its own deadline is the runner's doing
// (it did not answer), but one cut off because the whole run ran out of
// time, or was cancelled, says nothing about the runner, so the rule that
// sent it is skipped, not failed.
var (
	// ErrNoAnswer: the request's own deadline (the client's timeout, or a
	// probe's patience) passed before the answer was complete.
	ErrNoAnswer = errors.New("no answer before the deadline")
	// ErrRunDeadline: the context the request was sent under ended first
	// (the run's deadline passed, or the run was cancelled).
	ErrRunDeadline = errors.New("cut off by the end of the checking run (its deadline, or a cancellation), not by the runner")

	// ErrUnreachable: no connection could be made.
	ErrUnreachable = errors.New("could not connect")
	// ErrReset: the runner closed or reset the connection before a
	// complete answer.
	ErrReset = errors.New("the connection was closed or reset before a complete answer")
	// ErrMalformed: what came back is not HTTP/1.1 (garbage instead of a
	// status line, a broken header, bad chunked framing).
	ErrMalformed = errors.New("the answer is not well-formed HTTP/1.1")
	// ErrHeaderTooLarge: the answer's header block ran past MaxHeader.
	ErrHeaderTooLarge = errors.New("the answer's header block exceeds the checker's cap")
	// ErrTransport: any other transport failure.
	ErrTransport = errors.New("transport failure")

	// ErrHungUp: the checker closed the connection on purpose before the
	// answer was complete (HangUpAfter, StreamLimits.Until), to see what
	// the runner does with a client that went away (§4.5). It says nothing
	// about the runner's answer, which nobody waited for.
	ErrHungUp = errors.New("the checker hung up on purpose before the answer was complete")
)

// HangUpAfter derives a context under which a request is abandoned after
// d: the exchange then ends with ErrHungUp, not as a deadline.
func HangUpAfter(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, d, ErrHungUp)
}

// TransportError is a classified transport failure: Class is one of the
// Err* classes above and Err what the transport said.
type TransportError struct {
	Class error
	Err   error
}

// maxErrText bounds the transport's own words in Error: net/http quotes
// what it could not parse, and a hostile runner chooses those bytes.
const maxErrText = 160

func (e *TransportError) Error() string {
	s := e.Err.Error()
	if len(s) > maxErrText {
		s = strings.ToValidUTF8(s[:maxErrText], "") + " …"
	}
	return e.Class.Error() + ": " + s
}

// Unwrap gives both the class and the underlying error to errors.Is/As.
func (e *TransportError) Unwrap() []error { return []error{e.Class, e.Err} }

// errRequestDeadline is the cause a request's own deadline is given, so
// that context.Cause tells it from the parent's end.
var errRequestDeadline = errors.New("the request's own deadline")

// errPatience marks a withheld-body probe the client stopped waiting on.
var errPatience = errors.New("patience ran out")

// withDeadline derives a request's context: it ends at d (with
// errRequestDeadline as its cause) or when parent does.
func withDeadline(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, d, errRequestDeadline)
}

// classify turns a transport error into an Exchange's Err. ctx is the
// request's own context (see withDeadline).
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*TransportError); ok {
		return err // classified already
	}
	if errors.Is(err, ErrHungUp) || errors.Is(context.Cause(ctx), ErrHungUp) {
		return ErrHungUp
	}
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errRequestDeadline) {
			return ErrNoAnswer
		}
		return ErrRunDeadline
	}
	if errors.Is(err, errRequestDeadline) || errors.Is(err, errPatience) || errors.Is(err, context.DeadlineExceeded) {
		return ErrNoAnswer
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		// A connection's deadline is its context's: where that is about to
		// pass, the context says whose deadline it was (the run's, ending
		// at the same instant, is no silence of the runner's).
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < deadlineSlop {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), errRequestDeadline) {
				return ErrRunDeadline
			}
		}
		return ErrNoAnswer // a dial or conn deadline, which is the request's own
	}
	return &TransportError{Class: classOf(err), Err: err}
}

// deadlineSlop is how near its context's deadline a connection's timeout
// is taken for that deadline.
const deadlineSlop = 20 * time.Millisecond

// malformedSigns are net/http's words for an answer it could not parse;
// it exports no error values for them.
var malformedSigns = []string{
	"malformed HTTP", "malformed MIME", "invalid byte in chunk", "chunked encoding", "chunk length",
	"suspiciously long trailer", "bad Content-Length", "invalid Content-Length", "unsupported transfer encoding",
	"too many 1xx", "invalid header", "bogus", "missing form body", "unexpected EOF reading trailer",
}

func classOf(err error) error {
	if errors.Is(err, errHeaderTooLarge) {
		return ErrHeaderTooLarge
	}
	msg := err.Error()
	if strings.Contains(msg, "response headers exceeded") {
		return ErrHeaderTooLarge
	}
	var pe textproto.ProtocolError
	if errors.As(err, &pe) {
		return ErrMalformed
	}
	for _, s := range malformedSigns {
		if strings.Contains(msg, s) {
			return ErrMalformed
		}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return ErrUnreachable
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(msg, "server closed") || strings.Contains(msg, "connection reset") {
		return ErrReset
	}
	return ErrTransport
}

// errHeaderTooLarge is the raw reader's own word for a header block past
// MaxHeader (the Transport says it in prose, matched in classOf).
var errHeaderTooLarge = errors.New("header block past the cap")
