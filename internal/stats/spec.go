package stats

import (
	"regexp"
	"strconv"
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
	// Confidence is the level of the intervals put on every figure, in
	// (0, 1); 0 asks for none.
	Confidence float64
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

// sloTerm is the shape of one SLO term, ParseSLO checks its name and value.
var sloTerm = regexp.MustCompile(`^(ttft|tpot|e2el|e2e|ttp|itl):[0-9.]+$`)

// IsSLOTerm reports whether word has the shape of one SLO term
// ("ttft:2000"): vLLM's --goodput takes its terms as words of their own,
// so the words after the first may stand among a command's arguments.
func IsSLOTerm(word string) bool { return sloTerm.MatchString(word) }

// SLO is Goodput plus extra SLO words (stray "name:ms" arguments, which
// must follow a Goodput term) over the preset's request constraints.
func (s Spec) SLO(extra []string) (SLO, error) {
	for _, a := range extra {
		if !IsSLOTerm(a) || len(s.Goodput) == 0 {
			return SLO{}, setting.Errorf("", "", "unexpected argument %q (SLO terms follow %v, e.g. %[2]v ttft:2000 tpot:50)", a, setting.Name("Goodput"))
		}
	}
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
	if c := s.Confidence; c != 0 && !(c > 0 && c < 1) {
		return o, setting.Errorf("Confidence", strconv.FormatFloat(c, 'g', -1, 64), "must be a level between 0 and 1, such as 0.95 (0 for no intervals)")
	}
	o.Confidence = s.Confidence
	return o, nil
}
