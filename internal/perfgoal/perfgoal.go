// Package perfgoal is what the project's benchmarks share: a small size
// for CI's smoke run, and a line in a benchmark's output when a figure is
// past twice the value docs/performance.md documents.
//
// CI runs every benchmark once under -short (`go test -short -run '^$'
// -bench . -benchtime 1x`), so that none rots unnoticed; that run proves
// a benchmark still works, not its figure, so the sizes shrink and the
// figures go unjudged. Timing figures are never a test's failure (CI
// machines are noisy); a quiet run that is 2× off says so in its output.
package perfgoal

import "testing"

// Size is full, or smoke under -short (CI's smoke run).
func Size(full, smoke int) int {
	if testing.Short() {
		return smoke
	}
	return full
}

// Smoke reports whether this is CI's smoke run (-short).
func Smoke() bool { return testing.Short() }

// AtMost notes in b's output when got (a cost: time, memory) is more than
// twice documented, in the unit named by what. Not under -short.
func AtMost(b *testing.B, what string, got, documented float64) {
	b.Helper()
	if !testing.Short() && got > 2*documented {
		b.Logf("REGRESSION? %s %.4g is more than 2× the documented %.4g (docs/performance.md); on a quiet machine that is a regression", what, got, documented)
	}
}

// AtLeast notes in b's output when got (a rate) is under half of
// documented. Not under -short.
func AtLeast(b *testing.B, what string, got, documented float64) {
	b.Helper()
	if !testing.Short() && got < documented/2 {
		b.Logf("REGRESSION? %s %.4g is under half the documented %.4g (docs/performance.md); on a quiet machine that is a regression", what, got, documented)
	}
}

// PerOp is the wall time of one op of b so far, in ns.
func PerOp(b *testing.B) float64 {
	if b.N == 0 {
		return 0
	}
	return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
}

// Sizes is full, or smoke under -short: a benchmark's list of sizes.
func Sizes(full, smoke []int) []int {
	if testing.Short() {
		return smoke
	}
	return full
}
