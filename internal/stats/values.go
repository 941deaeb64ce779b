package stats

// Values collects one metric's samples (any unit) for a summary in bounded
// memory, as an Accumulator's series do: exact up to ExactRequests samples,
// then in a sketch whose percentiles are within SketchRelErr of the exact
// ones (marked Approx); count, mean, std, min and max stay exact. Below the
// bound its summary is SummarizeValues's. The zero value is ready; a Values
// is not safe for concurrent use.
type Values struct {
	s     series[float64]
	limit int // ExactRequests when 0; tests lower it
}

// Add adds one sample. NaN and infinities are not samples: they are left
// out.
func (v *Values) Add(x float64) {
	if x != x || x > maxFloat || x < -maxFloat {
		return
	}
	if v.s.limit == 0 {
		v.s.scale, v.s.limit = 1, v.limit
		if v.s.limit == 0 {
			v.s.limit = ExactRequests
		}
	}
	v.s.add(x, x)
}

// maxFloat bounds the samples a sketch takes (DDSketch refuses larger
// ones); no latency or token count comes near it.
const maxFloat = 1e300

// Len is the number of samples added.
func (v *Values) Len() int { return v.s.mom.n }

// Summarize is the samples' MetricSummary at percentiles ps (nil: the
// defaults), named name.
func (v *Values) Summarize(name string, ps []float64) MetricSummary {
	if ps == nil {
		ps = DefaultPercentiles
	}
	if v.s.sk == nil {
		return valuesSummary(name, ps, v.s.vals)
	}
	return summarizeSketch(name, ps, &v.s, nil, v.s.mom)
}

// Merge adds o's samples to v (o is unchanged): exact while both are and
// their union is within the bound, else in v's sketch.
func (v *Values) Merge(o *Values) {
	if o.Len() == 0 {
		return
	}
	if v.s.limit == 0 {
		v.s.scale, v.s.limit = 1, max(v.limit, o.s.limit)
		if v.s.limit == 0 {
			v.s.limit = ExactRequests
		}
	}
	if v.s.sk == nil && o.s.sk == nil && len(v.s.vals)+len(o.s.vals) <= v.s.limit {
		v.s.vals = append(v.s.vals, o.s.vals...)
		v.s.mom = v.s.mom.merge(o.s.mom)
		return
	}
	v.s.spill()
	if o.s.sk != nil {
		_ = v.s.sk.MergeWith(o.s.sk) // same mapping: cannot fail
	} else {
		for _, x := range o.s.vals {
			_ = v.s.sk.Add(x)
		}
	}
	v.s.mom = v.s.mom.merge(o.s.mom)
}
