package stats

import (
	"strings"

	"github.com/goodput/goodput/internal/setting"
)

// Spec is how records are summarised, as a user writes it (bench's and
// vLLM's flag syntax); its methods parse it into Options, naming the
// setting at fault in a *setting.Error.
type Spec struct {
	// Goodput are SLO words ("ttft:2000 tpot:50"), ParseSLO's syntax.
	Goodput []string
	// SLOPreset names a product's SLO (Presets); Goodput and
	// SessionGoodput override it constraint by constraint.
	SLOPreset string
	// SessionGoodput is the session SLO, ParseSessionSLO's syntax.
	SessionGoodput string
	// PercentileMetrics, MetricPercentiles and Buckets are
	// ParseMetrics', ParsePercentiles' and ParseBuckets' syntax.
	PercentileMetrics string
	MetricPercentiles string
	Buckets           string
}

// Preset is SLOPreset's preset; nil when none is named.
func (s Spec) Preset() (*Preset, error) {
	if s.SLOPreset == "" {
		return nil, nil
	}
	p, err := LookupPreset(s.SLOPreset)
	if err != nil {
		return nil, setting.Errorf("SLOPreset", "", "%v", err)
	}
	return &p, nil
}

// SLO is Goodput plus extra SLO words (stray "name:ms" arguments) over
// the preset's request constraints.
func (s Spec) SLO(extra []string) (SLO, error) {
	p, err := s.Preset()
	if err != nil {
		return SLO{}, err
	}
	slo, err := ParseSLO(strings.Join(append(append([]string{}, s.Goodput...), extra...), " "))
	if err != nil {
		return SLO{}, setting.Errorf("Goodput", "", "%v", err)
	}
	if p != nil {
		slo, _ = p.Merge(slo, SessionSLO{})
	}
	return slo, nil
}

// SessionSLO is SessionGoodput over the preset's session constraints.
func (s Spec) SessionSLO() (SessionSLO, error) {
	p, err := s.Preset()
	if err != nil {
		return SessionSLO{}, err
	}
	slo, err := ParseSessionSLO(s.SessionGoodput)
	if err != nil {
		return slo, setting.Errorf("SessionGoodput", "", "%v", err)
	}
	if p != nil {
		_, slo = p.Merge(SLO{}, slo)
	}
	return slo, nil
}

// Options parses the spec plus extra SLO words.
func (s Spec) Options(extra []string) (Options, error) {
	var o Options
	var err error
	if o.SLO, err = s.SLO(extra); err != nil {
		return o, err
	}
	if o.Percentiles, err = ParsePercentiles(s.MetricPercentiles); err != nil {
		return o, setting.Errorf("MetricPercentiles", "", "%v", err)
	}
	if o.Metrics, err = ParseMetrics(s.PercentileMetrics); err != nil {
		return o, setting.Errorf("PercentileMetrics", "", "%v", err)
	}
	if o.Buckets, err = ParseBuckets(s.Buckets); err != nil {
		return o, setting.Errorf("Buckets", "", "%v", err)
	}
	return o, nil
}
