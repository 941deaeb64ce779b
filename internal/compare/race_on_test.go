//go:build race

package compare_test

// raceEnabled: the race detector slows the simulated runs about twenty
// times, so the seeded trials run a subset under it.
const raceEnabled = true
