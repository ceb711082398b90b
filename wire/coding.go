package wire

import (
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// A stream is asked for as a browser asks for it: with Accept-Encoding:
// gzip. A framework's compression middleware (Express's compression(),
// say) applies only where the client offers a coding, and where it does
// not flush after each event it holds the whole stream for such a client
// and sends it as written to one that offers none. A checker that offered
// none would time a stream no browser ever sees (§4.3).
//
// The decoding is the checker's own, not net/http's transparent one, for
// three reasons. The Transport decodes only where it added the header
// itself, and then deletes Content-Encoding and Content-Length from the
// head the rules judge and the evidence shows. It would decode whatever
// it was given, where the checker offers gzip only on a stream and
// decodes only what it offered. And the strict event-stream reader must
// judge the bytes the runner wrote, each at the moment it could be read:
// decoding gzip (a content coding, RFC 9110 §8.4.1) leaves those bytes as
// they were written, line ends, byte order mark and all, and the reader
// times each event as it comes out of the decoder, which is when a
// browser's reader would have it. The caps count the decoded bytes, which
// are what is parsed and kept.

// ErrCoding is the class of an answer whose content coding the checker
// did not offer, or whose coded body does not decode.
var ErrCoding = errors.New("the answer's content coding was not offered, or does not decode")

// offerGzip sets Accept-Encoding: gzip on r, unless r sets its own.
func offerGzip(r Request) Request {
	if r.Header.Get("Accept-Encoding") != "" {
		return r
	}
	r.Header = r.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set("Accept-Encoding", "gzip")
	return r
}

// decoded is the body of resp as the checker reads it: gzip-decoded where
// the answer is gzip-coded (ex.Coding then says so), as it came where it
// names no coding (or identity), and an error for any other coding, which
// the checker did not offer and cannot read. contentLength is what the
// caps may expect of the decoded body: the announced length, unknown (-1)
// where the body is coded.
func decoded(ex *Exchange, resp *http.Response) (body io.Reader, contentLength int64, err error) {
	coding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	switch coding {
	case "", "identity":
		return resp.Body, resp.ContentLength, nil
	case "gzip", "x-gzip":
		ex.Coding = "gzip"
		return &gunzip{r: resp.Body}, -1, nil
	}
	return nil, 0, &TransportError{Class: ErrCoding, Err: fmt.Errorf("answered Content-Encoding %q, where the checker offered only gzip", resp.Header.Get("Content-Encoding"))}
}

// gunzip decodes a gzip-coded body as it arrives. The gzip header is read
// on the first Read, not before, so that a runner holding its stream
// holds it under the read's deadline like any other silence.
type gunzip struct {
	r io.Reader
	z *gzip.Reader
}

func (g *gunzip) Read(p []byte) (int, error) {
	if g.z == nil {
		z, err := gzip.NewReader(g.r)
		if err != nil {
			return 0, codingError(err)
		}
		g.z = z
	}
	n, err := g.z.Read(p)
	return n, codingError(err)
}

// codingError classes the decoder's own complaints (a broken header, a
// corrupt block, a wrong checksum) as ErrCoding, and passes on what the
// transport said (an end, a reset, a deadline) as it was.
func codingError(err error) error {
	var corrupt flate.CorruptInputError
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.As(err, &corrupt) {
		return &TransportError{Class: ErrCoding, Err: fmt.Errorf("gzip-coded body: %w", err)}
	}
	return err
}
