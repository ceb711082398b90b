# postern-conformance: the over-the-wire conformance checker for Postern.

GO        ?= go
PKGS      := ./...
TESTFLAGS ?=
STATICCHECK_VERSION := v0.8.2
BIN       := bin/postern-conformance

.PHONY: all build test race lint fmt bench demo clean

all: lint test

build:
	$(GO) build -o $(BIN) ./cmd/postern-conformance

## test: the whole suite under the race detector (what CI runs). Each slow
## case has a deadline of its own (checks/posterntest/pace), so -timeout, which ends
## a package's whole test binary with a goroutine dump, is only the last
## resort: set past what a loaded 2-core machine needs. TESTFLAGS adds
## go test's own (make test TESTFLAGS=-json lists every test's time).
##
## The packages that take longest are named first, so that go test starts
## them first and the short ones fill in beside them; by default it runs
## GOMAXPROCS test binaries at once, and the longest (the command's, three
## minutes on 2 cores) would start last. Most of what the slow packages do
## is wait out windows and launched processes, so twice as many binaries
## as cores run at once (TESTP); inside each, checks/posterntest/pace bounds what
## runs side by side by the cores it finds.
SLOWEST   := ./cmd/postern-conformance ./checks/runner ./checks/entitlement ./checks/client
TESTP     ?= $(shell echo $$(( 2 * $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2) )))
test:
	$(GO) test -race -count=1 -timeout 20m -p $(TESTP) $(TESTFLAGS) $(SLOWEST) $(PKGS)

## lint: formatting, go vet and staticcheck
lint: fmt
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: a hundred reference runners in one fleet (first: the sockets the
## other benchmarks leave in TIME_WAIT slow it), a full check of one
## (median-ms, peak-heap-MiB; with --execute, agent-starts/check), a full
## --execute check of a slow agent (wall and starts), a client check (in process, and the
## reference client as a command: wall, and client-start-ms), what --html adds to a check, then
## how long each hostile runner takes and the heap it costs
bench:
	$(GO) test -run '^$$' -bench 'BenchmarkFleet$$' -benchtime 1x ./checks/fleet/
	$(GO) test -run '^$$' -bench 'BenchmarkFullCheck' -benchmem -benchtime 20x ./checks/runner/
	$(GO) test -run '^$$' -bench 'BenchmarkExecuteSlowAgent$$' -benchtime 1x ./checks/runner/
	$(GO) test -run '^$$' -bench 'BenchmarkClientCheck' -benchtime 3x ./checks/client/
	$(GO) test -run '^$$' -bench . -benchmem ./wire/ ./schemas/
	$(GO) test -run '^$$' -bench 'BenchmarkWrite' -benchmem -benchtime 20x ./report/html/
	$(GO) test -count=1 -v -run 'TestHostileShapes' ./checks/runner/ | grep 'ended in' 

demo:
	$(GO) run ./cmd/postern-conformance demo

clean:
	rm -rf bin
