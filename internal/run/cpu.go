package run

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// processCPU is the process' user plus system CPU time so far, from
// /proc/self/stat (Linux; USER_HZ is 100 there); ok is false elsewhere.
// The runtime's own /cpu/classes metrics only move at garbage collections,
// too coarse for a run.
func processCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command name (which may hold spaces) start at the
	// state, field 3; utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, true
}

// cpuShare is the share of the machine's CPU the process used over wall
// (0 when unknown or the interval is too short to say).
func cpuShare(a, b time.Duration, okA, okB bool, wall time.Duration) float64 {
	if !okA || !okB || wall < time.Second {
		return 0
	}
	return min(max(float64(b-a)/(float64(wall)*float64(runtime.NumCPU())), 0), 1)
}

// cpuMeter measures the process' CPU share over an interval; it reads 0
// when the process also hosts the server measured (the embedded simulator),
// whose CPU would be blamed on the client.
type cpuMeter struct {
	off  bool
	cpu0 time.Duration
	ok0  bool
	wall time.Time
}

func startCPU(off bool) cpuMeter {
	c, ok := processCPU()
	return cpuMeter{off: off, cpu0: c, ok0: ok, wall: time.Now()}
}

func (m cpuMeter) share() float64 {
	if m.off {
		return 0
	}
	c, ok := processCPU()
	return cpuShare(m.cpu0, c, m.ok0, ok, time.Since(m.wall))
}
