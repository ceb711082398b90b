//go:build race

package main

// raceEnabled says the tests run under the race detector (go test -race),
// which slows the in-process checker several times: parallelism derived
// from runtime.NumCPU() counts it.
const raceEnabled = true
