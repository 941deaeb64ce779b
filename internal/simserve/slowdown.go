package simserve

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// MaxSlowdown is the largest slowdown factor the server accepts: a
// thousand times slower is already a vendor that is down.
const MaxSlowdown = 1000

// slowdown is the factor by which every engine iteration is stretched on
// the wall clock (1: as the engine computes), set by POST /goodput/slowdown
// or scheduled by Options.SlowdownAfter. It degrades the simulated vendor
// on purpose, so that a watcher of its SLA can be tested: TTFT, TPOT and
// E2E all grow by the factor, because the engine's own timeline is what is
// stretched. Safe for concurrent use.
type slowdown struct {
	mu     sync.Mutex
	factor float64 // 0 means 1
	at     int64   // server ns at which next takes over; 0: nothing scheduled
	next   float64
}

// factorAt returns the factor in force at now (server ns), starting a
// scheduled slowdown whose time has come.
func (sd *slowdown) factorAt(now int64) float64 {
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if sd.at > 0 && now >= sd.at {
		sd.factor, sd.at = sd.next, 0
	}
	if sd.factor == 0 {
		return 1
	}
	return sd.factor
}

// set makes f the factor from now on. A scheduled slowdown still to come
// still starts at its time: it is part of the scenario the server was
// started with.
func (sd *slowdown) set(f float64) {
	sd.mu.Lock()
	sd.factor = f
	sd.mu.Unlock()
}

// schedule makes f the factor from server time at (ns) on.
func (sd *slowdown) schedule(at int64, f float64) {
	sd.mu.Lock()
	sd.at, sd.next = max(at, 1), f
	sd.mu.Unlock()
}

// errSlowdownRange is why a slowdown factor is refused.
var errSlowdownRange = fmt.Errorf("want a factor above 0 and at most %d (1 restores full speed)", MaxSlowdown)

// checkSlowdown validates a slowdown factor.
func checkSlowdown(f float64) error {
	if math.IsNaN(f) || f <= 0 || f > MaxSlowdown {
		return errSlowdownRange
	}
	return nil
}

// SetSlowdown makes every engine iteration from now on take factor times
// as long on the wall clock (1 restores full speed), so that latencies
// grow by the factor while the engine's decisions stay the same. It
// returns an error for a factor outside (0, MaxSlowdown], and on a fleet
// (NewFleet), whose replicas keep schedules the server cannot stretch.
func (s *Server) SetSlowdown(factor float64) error {
	if s.fleet != nil {
		return errSlowdownFleet
	}
	if err := checkSlowdown(factor); err != nil {
		return fmt.Errorf("simserve: slowdown %v: %w", factor, err)
	}
	s.slow.set(factor)
	return nil
}

// Slowdown returns the slowdown factor in force (1: none).
func (s *Server) Slowdown() float64 { return s.slow.factorAt(s.clock()) }

// stretch returns the wall-clock end of an iteration that the engine ran
// from start to end, under the factor in force at start.
func (s *Server) stretch(start, end int64) int64 {
	f := s.slow.factorAt(start)
	if f == 1 || end <= start {
		return end
	}
	s.stretched = true
	return start + int64(math.Round(float64(end-start)*f))
}

// serveSlowdown answers POST /goodput/slowdown (factor from the query,
// a form body or a JSON body {"factor": F}) and GET /goodput/slowdown, both
// with {"factor": F}.
func (s *Server) serveSlowdown(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		f, aerr := slowdownFactor(w, r)
		if aerr != nil {
			writeError(w, aerr)
			return
		}
		if s.fleet != nil {
			writeError(w, badRequest("factor", "a slowdown is not supported with several replicas"))
			return
		}
		s.slow.set(f)
		s.log.Info("simserve: slowdown factor set", "factor", f)
	}
	writeJSON(w, http.StatusOK, struct {
		Factor float64 `json:"factor"`
	}{s.Slowdown()})
}

// slowdownFactor reads a POST's factor: ?factor=F, a form body factor=F, or
// a JSON body {"factor": F}.
func slowdownFactor(w http.ResponseWriter, r *http.Request) (float64, *apiError) {
	raw := r.URL.Query().Get("factor")
	if raw == "" {
		body, aerr := readBody(w, r)
		if aerr != nil {
			return 0, aerr
		}
		b := strings.TrimSpace(string(body))
		switch {
		case strings.HasPrefix(b, "{"):
			var v struct {
				Factor *float64 `json:"factor"`
			}
			if err := decodeJSON(body, &v); err != nil {
				return 0, err.(*apiError)
			}
			if v.Factor == nil {
				return 0, badRequest("factor", "required")
			}
			raw = strconv.FormatFloat(*v.Factor, 'g', -1, 64)
		case b != "":
			vals, err := url.ParseQuery(b)
			if err != nil {
				return 0, badRequest("factor", "want a form body factor=F or a JSON body {\"factor\": F}: %v", err)
			}
			raw = vals.Get("factor")
		}
	}
	if raw == "" {
		return 0, badRequest("factor", "required (?factor=F, a form body factor=F or {\"factor\": F})")
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return 0, badRequest("factor", "want a number, got %q", raw)
	}
	if err := checkSlowdown(f); err != nil {
		return 0, badRequest("factor", "%v: %v", f, err)
	}
	return f, nil
}

// validateSlowdown checks Options' scheduled slowdown.
func validateSlowdown(opt Options) error {
	switch {
	case opt.SlowdownAfter < 0:
		return fmt.Errorf("simserve: SlowdownAfter %v: want ≥ 0", opt.SlowdownAfter)
	case opt.SlowdownAfter > 0 && opt.Slowdown == 0:
		return errors.New("simserve: SlowdownAfter needs a Slowdown factor")
	case opt.Slowdown != 0:
		if err := checkSlowdown(opt.Slowdown); err != nil {
			return fmt.Errorf("simserve: Slowdown %v: %w", opt.Slowdown, err)
		}
	}
	return nil
}
