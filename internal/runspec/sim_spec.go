package runspec

import (
	"time"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
)

// VirtualSpec is what a run in virtual time (goodput sim) takes beyond
// the load and the engine, as a user gives it.
type VirtualSpec struct {
	// IgnoreEOS generates every request's full output length; without it
	// a request may stop early at its natural length. NaturalStop lets a
	// request whose dataset recorded its output length stop early too.
	IgnoreEOS, NaturalStop bool
	// Timeout is the client's limit on a whole request (0: none);
	// ServerIgnoresDisconnect runs a timed-out request on.
	Timeout                 time.Duration
	ServerIgnoresDisconnect bool
	// ScrapeInterval samples the engine's state as a scraper of its
	// /metrics would (0: not).
	ScrapeInterval time.Duration
}

// Apply checks s and sets it on cfg; errors are *setting.Error of
// VirtualSpec's fields.
func (s VirtualSpec) Apply(cfg *run.Config) error {
	switch {
	case s.IgnoreEOS && s.NaturalStop:
		return setting.Errorf("", "", "%v and %v contradict each other: choose one", setting.Name("IgnoreEOS"), setting.Name("NaturalStop"))
	case s.Timeout < 0:
		return setting.Errorf("Timeout", s.Timeout.String(), "want ≥ 0 (0: none)")
	case s.ServerIgnoresDisconnect && s.Timeout == 0:
		return setting.Errorf("", "", "%v needs %v (without one no client leaves)", setting.Name("ServerIgnoresDisconnect"), setting.Name("Timeout"))
	case s.ScrapeInterval < 0:
		return setting.Errorf("ScrapeInterval", s.ScrapeInterval.String(), "want ≥ 0 (0: not sampled)")
	}
	cfg.IgnoreEOS, cfg.NaturalStopRecorded = s.IgnoreEOS, s.NaturalStop
	cfg.ClientTimeout, cfg.KeepAbandoned = s.Timeout, s.ServerIgnoresDisconnect
	cfg.Scrape = nil
	if s.ScrapeInterval > 0 {
		cfg.Scrape = &run.ScrapeConfig{Interval: s.ScrapeInterval}
	}
	return nil
}
