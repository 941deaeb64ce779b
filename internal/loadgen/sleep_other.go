//go:build !linux

package loadgen

import "time"

// preciseSpan is 0 where no finer sleep than the runtime's is used.
const preciseSpan = 0

func osSleep(d time.Duration) { time.Sleep(d) }
