package loadgen

import (
	"syscall"
	"time"
)

// preciseSpan is how much of a wait is left to osSleep: enough to cover the
// runtime timer's millisecond rounding.
const preciseSpan = 2 * time.Millisecond

// osSleep blocks the calling thread in nanosleep(2), which wakes within tens
// of microseconds, where the runtime's timers round to milliseconds.
func osSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
