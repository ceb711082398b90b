package wire

import (
	"errors"
	"io"
	"sync"
)

// DefaultBodyBudget is the default cap on the response bytes one Client
// holds, summed over every exchange of a run, whether still being read or
// kept as evidence. A run keeps every exchange for its report, and a
// checking engine has many requests in flight at once: without a shared
// cap, a runner that answers every request with a body at MaxBody would
// cost MaxBody times the number of requests (~95 MiB for a default run).
//
// 8 MiB is hundreds of times what a conforming runner's whole run holds
// (~20 KiB: its documents and refusals are small), and still room for
// several outputs near MaxBody. It is sized for issue 6's goal of a 48 MiB
// peak heap against any runner: what the budget holds, plus the garbage
// collector's headroom over what is live (the heap grows to about twice
// that before a collection), plus the transient cost of reading and
// decoding, must fit. Measured on the concurrent engine with a runner
// whose every answer is a complete body just under MaxBody, the whole
// check peaks at 32–35 MiB with 8 MiB, 37–52 MiB with 12 MiB.
const DefaultBodyBudget = 8 << 20

// MinBody is the floor of a body's cap once the budget is spent, so that
// evidence is never empty and a short refusal is still read whole: a
// runner that has used up the budget gets its later answers read to
// 64 KiB, which holds any error envelope or document this protocol has.
const MinBody = 64 << 10

// KeepTruncated is how much of a cut body is kept. A cut body cannot be
// judged (it is not the runner's whole answer), so it is kept only as
// evidence, and a report quotes a few KiB of it; keeping more would let a
// runner that sends endless bodies fill the budget with bytes no rule reads.
const KeepTruncated = 8 << 10

// MaxHeader caps a response's header block (the status line and every
// header). Go's Transport holds a header block in memory as it parses it.
const MaxHeader = 64 << 10

// budget is the bytes a Client may still hold: left falls as bodies are
// reserved and rises as what a finished read did not keep is given back.
// It may go below zero only by floors (see take) and by header blocks
// (charged whole, see keepHead), which bounds what is retained at the
// budget plus, for each exchange after it ran out, MinBody (KeepTruncated
// where the body was cut) and the header.
type budget struct {
	mu        sync.Mutex
	unlimited bool
	size      int64
	left      int64
	peak      int64 // the most held at once, for tests
}

func newBudget(size int64) *budget {
	return &budget{unlimited: size < 0, size: size, left: size}
}

// take reserves the cap for one read: want, or what is left of the
// budget where that is less, but never below floor (nor above want).
func (b *budget) take(want, floor int64) int64 {
	if want < 0 {
		want = 0
	}
	if b.unlimited {
		return want
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	g := min(want, max(b.left, floor))
	b.left -= g
	b.peak = max(b.peak, b.size-b.left)
	return g
}

// give returns n reserved bytes that a read did not keep (n may be
// negative: a read that kept more than it reserved).
func (b *budget) give(n int64) {
	if b.unlimited || n == 0 {
		return
	}
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
}

// held is how much is reserved or kept now.
func (b *budget) held() int64 {
	if b.unlimited {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size - b.left
}

// errCapReached ends a capped read that has more to give.
var errCapReached = errors.New("the body runs past its cap")

// bodyBuf accumulates a body read under a cap in chunks, so that growing
// it never copies what was read (as append and io.ReadAll do, leaving up
// to twice the body as garbage), and then hands back exactly what it holds.
type bodyBuf struct {
	chunks [][]byte
	n      int64
	tail   [4]byte // the last bytes, for endsBlank
	tailN  int
}

// A body of unknown length is read into chunks of 4 KiB, doubling to
// 64 KiB: a small answer costs little, a large one few allocations.
const (
	firstChunk = 4 << 10
	maxChunk   = 64 << 10
)

// spare returns room for up to want more bytes at the end of the buffer.
// hint, where positive, is the size the whole body is expected to be.
func (b *bodyBuf) spare(want, hint int64) []byte {
	if k := len(b.chunks); k > 0 {
		last := b.chunks[k-1]
		if len(last) < cap(last) {
			return last[len(last):min(cap(last), len(last)+int(min(want, maxChunk)))]
		}
	}
	size := int64(firstChunk)
	if k := len(b.chunks); k > 0 {
		size = min(2*int64(cap(b.chunks[k-1])), maxChunk)
	}
	if b.n == 0 && hint > 0 {
		size = hint // the announced length, where it is within the cap
	}
	size = min(size, want)
	c := make([]byte, 0, size)
	b.chunks = append(b.chunks, c)
	return c[:size]
}

// commit records that the first n bytes of the last spare slice were filled.
func (b *bodyBuf) commit(p []byte, n int) {
	k := len(b.chunks) - 1
	b.chunks[k] = b.chunks[k][:len(b.chunks[k])+n]
	b.n += int64(n)
	b.remember(p[:n])
}

// write appends a copy of p.
func (b *bodyBuf) write(p []byte) {
	for len(p) > 0 {
		s := b.spare(int64(len(p)), 0)
		n := copy(s, p)
		b.commit(s, n)
		p = p[n:]
	}
}

func (b *bodyBuf) remember(p []byte) {
	if len(p) >= len(b.tail) {
		b.tailN = copy(b.tail[:], p[len(p)-len(b.tail):])
		return
	}
	if keep := len(b.tail) - len(p); b.tailN > keep {
		copy(b.tail[:], b.tail[b.tailN-keep:b.tailN])
		b.tailN = keep
	}
	b.tailN += copy(b.tail[b.tailN:], p)
}

// endsBlank reports whether what was read ends with a blank line, in any
// of the spellings of the event-stream format.
func (b *bodyBuf) endsBlank() bool {
	return endsBlank(string(b.tail[:b.tailN]))
}

// bytes returns the first n bytes held (all of them where n < 0), in a
// slice of exactly that size.
func (b *bodyBuf) bytes(n int64) []byte {
	if n < 0 || n > b.n {
		n = b.n
	}
	if len(b.chunks) == 1 && int64(len(b.chunks[0])) == n && int64(cap(b.chunks[0])) == n {
		return b.chunks[0]
	}
	out := make([]byte, 0, n)
	for _, c := range b.chunks {
		if int64(len(out)) >= n {
			break
		}
		out = append(out, c[:min(int64(len(c)), n-int64(len(out)))]...)
	}
	return out
}

// readCapped reads r into b until it ends or limit bytes are held; then
// one more byte is asked for, only to learn whether the body goes on
// (truncated). The extra byte is not kept. hint is the announced length
// (-1 where none was). It returns r's error, io.EOF excepted.
func (b *bodyBuf) readCapped(r io.Reader, limit, hint int64) (truncated bool, err error) {
	if hint > limit {
		hint = 0
	}
	for b.n < limit {
		p := b.spare(limit-b.n, hint)
		n, err := r.Read(p)
		b.commit(p, n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			return false, err
		}
	}
	return probeMore(r)
}

// probeMore reads a byte past a full cap: whether there is one decides
// whether the body was cut. A runner that goes silent here is waited on
// under the request's deadline, like any other unfinished body.
func probeMore(r io.Reader) (bool, error) {
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		if n > 0 {
			return true, nil
		}
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// cappedTee is the reader an event-stream parser reads through: it
// passes at most limit bytes of r on, keeping a copy of each in buf, and
// then ends with errCapReached if r has more (io.EOF if not). err is the
// first error r returned, io.EOF included, which the caller consults
// because the parser's own reader maps a cancellation to a clean end.
type cappedTee struct {
	r         io.Reader
	limit     int64
	buf       bodyBuf
	err       error
	truncated bool
}

func (t *cappedTee) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if t.buf.n >= t.limit {
		more, err := probeMore(t.r)
		switch {
		case more:
			t.truncated, t.err = true, errCapReached
		case err != nil:
			t.err = err
		default:
			t.err = io.EOF
		}
		return 0, t.err
	}
	if int64(len(p)) > t.limit-t.buf.n {
		p = p[:t.limit-t.buf.n]
	}
	n, err := t.r.Read(p)
	t.buf.write(p[:n])
	if err != nil {
		t.err = err
	}
	return n, err
}
