package posterntest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"github.com/sigrix-io/postern-conformance/checks/entitlement"
)

// closeWait bounds how long closing a served handler waits for requests
// still in flight: a handler that ignores its request's cancellation must
// not hang the test.
var closeWait = 2 * time.Second

// serve is the origin of target, and what ends it: nothing for a URL; an
// http.Handler is served on an httptest.Server, closed by stop.
func serve(target any) (origin string, stop func() error, err error) {
	none := func() error { return nil }
	switch v := target.(type) {
	case string:
		return v, none, nil
	case *url.URL:
		if v == nil {
			break
		}
		return v.String(), none, nil
	case *httptest.Server:
		if v == nil {
			break
		}
		return v.URL, none, nil
	case http.Handler:
		if v == nil {
			break
		}
		srv := httptest.NewServer(v)
		return srv.URL, closer(srv), nil
	}
	return "", nil, fmt.Errorf("posterntest: the target is a runner's origin (a string or a *url.URL), an *httptest.Server or an http.Handler, not %T", target)
}

// closer closes srv once, waiting at most closeWait for the requests in
// flight; it says so where a handler outlived the wait.
func closer(srv *httptest.Server) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			done := make(chan struct{})
			go func() {
				srv.CloseClientConnections()
				srv.Close()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(closeWait):
				err = fmt.Errorf("the handler at %s still had requests in flight %s after the check ended; not waited for (does it ignore its request's context?)", srv.URL, closeWait)
			}
		})
		return err
	}
}

// LaunchHandler is a launcher for RunEntitlement that starts a runner in
// process: for each step it calls start with the step's variables (the
// distributor's URL, the token, a state directory), and serves the handler
// it returns on an httptest.Server, closed when the step ends. ctx ends
// with the step too, for a runner with work of its own in the background.
func LaunchHandler(start func(ctx context.Context, v entitlement.Vars) (http.Handler, error)) entitlement.Launcher {
	return entitlement.Func(func(ctx context.Context, v entitlement.Vars) (entitlement.Instance, error) {
		h, err := start(ctx, v)
		if err != nil {
			return nil, err
		}
		if h == nil {
			return nil, fmt.Errorf("posterntest.LaunchHandler: start returned no handler")
		}
		srv := httptest.NewServer(h)
		stop := closer(srv)
		return entitlement.Started{Addr: srv.URL, Halt: func() { _ = stop() }}, nil
	})
}
