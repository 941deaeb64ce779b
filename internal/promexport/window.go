package promexport

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/stats"
)

// windowSpans are the sliding windows reported, in seconds, with their
// label values.
var windowSpans = [...]struct {
	label string
	secs  int64
}{{"1m", 60}, {"5m", 300}}

// ringSecs is the ring's length: the longest window.
const ringSecs = 300

// windows counts finished requests, and those that met the SLO, in a ring
// of one-second slots covering the longest window, so memory is constant
// however much traffic passes. It is a prometheus.Collector computing the
// windowed gauges at scrape time.
type windows struct {
	now func() int64

	mu    sync.Mutex
	start int64 // first observation or creation time, ns
	slots [ringSecs]slot

	attain, goodput, limits *prometheus.Desc
	limitVals               []struct {
		name string
		secs float64
	}
}

// slot holds the counts of one second; sec tells which second it is for,
// so a stale slot is recognised (and reset) rather than cleared on a timer.
type slot struct {
	sec         int64
	total, good int64
}

func newWindows(slo stats.SLO, now func() int64) *windows {
	w := &windows{
		now:   now,
		start: now(),
		attain: prometheus.NewDesc("goodput_slo_attainment_ratio",
			"Fraction of streamed requests finished in the window that met every --goodput constraint (failed requests count as not met); absent while the window is empty.",
			[]string{"window"}, nil),
		goodput: prometheus.NewDesc("goodput_slo_goodput_requests_per_second",
			"Requests per second finished in the window that met every --goodput constraint.",
			[]string{"window"}, nil),
		limits: prometheus.NewDesc("goodput_slo_limit_seconds",
			"The --goodput constraints: the limit on each metric (ttft, tpot, e2el, ttp) that has one.",
			[]string{"metric"}, nil),
	}
	for _, l := range []struct {
		name string
		d    float64
	}{{"ttft", slo.TTFT.Seconds()}, {"tpot", slo.TPOT.Seconds()}, {"e2el", slo.E2E.Seconds()}, {"ttp", slo.TTP.Seconds()}} {
		if l.d > 0 {
			w.limitVals = append(w.limitVals, struct {
				name string
				secs float64
			}{l.name, l.d})
		}
	}
	for i := range w.slots {
		w.slots[i].sec = -1
	}
	return w
}

// secOf is the whole second holding t (ns), flooring for negative t.
func secOf(t int64) int64 {
	s := t / 1e9
	if t < 0 && t%1e9 != 0 {
		s--
	}
	return s
}

// add counts one request finished at t (ns).
func (w *windows) add(t int64, good bool) {
	sec := secOf(t)
	w.mu.Lock()
	s := &w.slots[((sec%ringSecs)+ringSecs)%ringSecs]
	if s.sec != sec {
		*s = slot{sec: sec}
	}
	s.total++
	if good {
		s.good++
	}
	w.mu.Unlock()
}

// window sums the slots of the last span seconds up to t (ns): the seconds
// sec(t)-span+1 … sec(t). dur is the time those seconds cover up to t, cut
// at the first observation possible (creation), in seconds.
func (w *windows) window(t, span int64) (total, good int64, dur float64) {
	cur := secOf(t)
	from := cur - span + 1
	w.mu.Lock()
	for i := range w.slots {
		s := &w.slots[i]
		if s.sec >= from && s.sec <= cur {
			total += s.total
			good += s.good
		}
	}
	start := w.start
	w.mu.Unlock()
	begin := max(from*1e9, start)
	return total, good, float64(t-begin) / 1e9
}

// Describe implements prometheus.Collector.
func (w *windows) Describe(ch chan<- *prometheus.Desc) {
	ch <- w.attain
	ch <- w.goodput
	ch <- w.limits
}

// Collect implements prometheus.Collector.
func (w *windows) Collect(ch chan<- prometheus.Metric) {
	t := w.now()
	for _, sp := range windowSpans {
		total, good, dur := w.window(t, sp.secs)
		if total > 0 {
			ch <- prometheus.MustNewConstMetric(w.attain, prometheus.GaugeValue, float64(good)/float64(total), sp.label)
		}
		rate := 0.0
		if dur > 0 {
			rate = float64(good) / dur
		}
		ch <- prometheus.MustNewConstMetric(w.goodput, prometheus.GaugeValue, rate, sp.label)
	}
	for _, l := range w.limitVals {
		ch <- prometheus.MustNewConstMetric(w.limits, prometheus.GaugeValue, l.secs, l.name)
	}
}
