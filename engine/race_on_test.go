//go:build race

package engine

// raceEnabled: the race detector slows the stages unevenly, so timing
// ratios mean nothing under it.
const raceEnabled = true
