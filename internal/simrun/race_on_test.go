//go:build race

package simrun

// raceEnabled: the race detector slows the simulated runs about twenty
// times, so the coverage trials run a subset under it.
const raceEnabled = true
