//go:build race

package inventory

// raceEnabled: the race detector slows decoding and observing unevenly, so
// timing ratios mean nothing under it.
const raceEnabled = true
