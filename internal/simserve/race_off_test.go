//go:build !race

package simserve_test

// raceDetector is true when the tests run under the race detector, which
// slows every goroutine handover several-fold: latency bounds widen.
const raceDetector = false
