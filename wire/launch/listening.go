package launch

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Listening waits, up to bound, for the runner's port to take a
// connection, where it refuses them at first. A runner may print its port
// once it has bound it and before it listens (uvicorn handed a bound
// socket does, between the two, all of its own start-up): a check sent
// in that moment meets connection refused, and reads a runner that is on
// its way as one that cannot be reached. Only a refusal is waited out,
// briefly and with a bound; any other failure is left to the check to
// report. A port still refusing at the bound, or a runner that exits
// meanwhile, is an *Error saying so; the runner is then stopped.
func (r *Runner) Listening(ctx context.Context, bound time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port))
	start := time.Now()
	deadline := start.Add(bound)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		d := net.Dialer{Timeout: max(time.Until(deadline), 100*time.Millisecond)}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close()
			return nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			return nil // not a refusal: the check reports what it meets
		}
		if exited, how := r.Exited(); exited {
			return r.fail("exited (%s) after printing POSTERN_PORT=%d, before anything listened on %s", how, r.Port, addr)
		}
		if time.Now().Add(wait).After(deadline) {
			return r.fail("printed POSTERN_PORT=%d, but %s refused every connection for the %s the checker retried after that (§2 has a runner report the port it binds; a check can begin only once it listens there)",
				r.Port, addr, time.Since(start).Round(10*time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// ListenWait is how long a launched runner's port is given to take a
// connection after the runner announced it (see Listening): a few
// seconds, the start-up a loaded machine may spend between binding a
// port and listening on it, and never more than the launch's own wait.
func ListenWait(launchTimeout time.Duration) time.Duration {
	return min(launchTimeout, 10*time.Second)
}
