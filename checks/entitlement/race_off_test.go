//go:build !race

package entitlement_test

// raceOn: the race detector multiplies what a walk costs the processor.
const raceOn = false
