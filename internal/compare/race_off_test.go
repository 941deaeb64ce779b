//go:build !race

package compare_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
