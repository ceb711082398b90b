package runner

import (
	"net/http"

	"github.com/sigrix-io/postern-conformance/wire"
)

// §2 Transport, and the parts of §2.1 that are about paths and methods.
var section2 = []*Rule{
	{
		ID: "2/http-1.1", Section: "2", Level: 1, Keyword: Must,
		Title: "the runner speaks HTTP/1.1",
		Probe: func(t *T) {
			ex := t.Env.Status.Ex
			if ex.Proto != "HTTP/1.1" {
				t.Fail(ex, "GET status was answered in %s, not HTTP/1.1", ex.Proto)
			}
		},
	},
	{
		ID: "2.1/unknown-path", Section: "2.1", Level: 1, Keyword: Must, Binding: Contract, Chain: "§2.1",
		Title: "a path under /postern/v0/ the runner does not implement answers 404 not_found",
		Probe: func(t *T) {
			for _, p := range []string{"conformance-no-such-verb", "describe/extra"} {
				r := wire.Get(p)
				r.Note = "a path Postern v0 does not define"
				ex := t.Do(r)
				if !ex.Is(http.StatusNotFound, "not_found") {
					t.Fail(ex, "GET %s answered %s, not 404 not_found", p, ex.Brief())
				}
			}
		},
	},
	{
		ID: "2.1/wrong-method", Section: "2.1", Level: 1, Keyword: Must,
		Title: "a wrong method on a defined path is refused in the error envelope, not a bare 405",
		Probe: func(t *T) {
			for _, r := range []wire.Request{
				{Method: http.MethodGet, Path: wire.Prefix + "run"},
				{Method: http.MethodDelete, Path: wire.Prefix + "describe"},
				{Method: http.MethodPut, Path: wire.Prefix + "status"},
			} {
				r.Note = "a method this path does not take"
				ex := t.Do(r)
				switch {
				case !ex.Answered():
					t.Fail(ex, "%s got no answer", ex.RequestLine())
				case ex.Status < 300:
					t.Warn(ex, "%s answered %d; a method the path does not take is refused (inferred: no keyword says so; §2.1 binds only the envelope of a refusal)", ex.RequestLine(), ex.Status)
				case ex.ErrorCode() == "":
					t.Fail(ex, "%s was refused %d without the error envelope (body %q)", ex.RequestLine(), ex.Status, wire.Excerpt(ex.Body, 80))
				default:
					// The envelope is there: its shape is judged here, as
					// 2.1/envelope judges every other refusal's.
					v, _ := ex.JSON()
					schemaFindings(t, "error", ex, v)
				}
			}
		},
	},
}
