package servermetrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxBodyBytes is the largest /metrics body Parse accepts (16 MiB). A real
// server's body is tens of kilobytes; one this large is a misconfigured
// endpoint (or a label explosion) that would cost more memory than the
// run being measured.
const MaxBodyBytes = 16 << 20

// ErrTooLarge is returned (wrapped) for a body over MaxBodyBytes.
var ErrTooLarge = errors.New("metrics body over size cap")

// SyntaxError is a body that is not the Prometheus text format.
type SyntaxError struct {
	// Line is the 1-based line the parser stopped at; 0 when unknown.
	Line int
	// Msg says what was wrong, in the parser's words.
	Msg string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("metrics text line %d: %s", e.Line, e.Msg)
	}
	return "metrics text: " + e.Msg
}

// Snapshot is one scrape of one /metrics endpoint, mapped onto the
// canonical vocabulary. A Snapshot is a value: nothing retains it after
// Parse returns, and it is safe to read from several goroutines.
type Snapshot struct {
	// TimeNS is when the scrape was taken, in nanoseconds from the run's
	// start (the clock the run's records use).
	TimeNS int64
	// Kind is the server detected from the families present; KindDCGM
	// when only GPU families were found.
	Kind Kind
	// Values holds the canonical gauges and counters, in base units,
	// summed over a server's model/engine label values (averaged for
	// fractions, see Def.Mean); GPU metrics are aggregated over GPUs. A
	// name is absent when the server does not report it.
	Values map[Name]float64
	// Histograms holds the canonical histograms, bucket-wise summed over
	// label values.
	Histograms map[Name]Histogram
	// GPUs holds one entry per GPU of a DCGM exporter, ordered by ID.
	GPUs []GPU
	// Raw holds the families not mapped above, by their exposed names:
	// their first MaxRawSeries series.
	Raw map[string]Family
	// DroppedSeries counts the sample lines Parse did not read: past
	// MaxRawSeries of the unmapped families, past MaxKnownSeries of the
	// vocabulary's. 0 for any real server's body.
	DroppedSeries int
}

// Histogram is a cumulative histogram: the state of all observations
// since the server started, or (inside a Window) the difference between
// two such states.
type Histogram struct {
	// Buckets are cumulative counts by upper bound, ascending; the last
	// has UpperBound +Inf.
	Buckets []Bucket
	// Count is the number of observations.
	Count float64
	// Sum is the sum of observed values, in the metric's unit.
	Sum float64
}

// Bucket is one cumulative bucket: Count observations were <= UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// GPU is one GPU's values from a DCGM exporter.
type GPU struct {
	// ID is the exporter's "gpu" label (the device index), with
	// "/<GPU_I_ID>" appended for a MIG instance.
	ID string
	// UUID and Model are the exporter's "UUID" and "modelName" labels.
	UUID, Model string
	// Values holds GPUUtil (0–1), GPUMemUsedBytes and GPUPowerWatts for
	// this GPU alone.
	Values map[Name]float64
}

// Family is a metric family kept as exposed.
type Family struct {
	// Type is "counter", "gauge", "histogram", "gaugehistogram", "summary"
	// or "untyped".
	Type string
	// Samples are the family's series in exposition order.
	Samples []Sample
}

// Sample is one series of a raw family.
type Sample struct {
	// Labels are the series' labels.
	Labels map[string]string
	// Value is the value of a counter, gauge or untyped series, and the
	// observation count of a histogram or summary.
	Value float64
	// Histogram is set for histogram series.
	Histogram *Histogram
}

// Parse reads a Prometheus text exposition (a /metrics body) taken at
// atNS nanoseconds from the run's start and maps it onto the canonical
// vocabulary. It reads at most MaxBodyBytes+1 bytes. A body that is not
// the text format returns a *SyntaxError; one over the cap wraps
// ErrTooLarge. Parse never panics on its input.
func Parse(r io.Reader, atNS int64) (Snapshot, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes+1))
	if err != nil {
		return Snapshot{}, fmt.Errorf("read metrics body: %w", err)
	}
	return ParseBytes(body, atNS)
}

// ParseBytes is Parse of a body already read (a scrape.Sample's), which
// it does not retain or change. Whatever the body's size, it parses at
// most MaxKnownSeries series of the vocabulary's families and
// MaxRawSeries of the others; the rest are counted in
// Snapshot.DroppedSeries.
func ParseBytes(body []byte, atNS int64) (Snapshot, error) {
	if len(body) > MaxBodyBytes {
		return Snapshot{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxBodyBytes)
	}
	sf := sift(body)
	// UTF-8 names are what current servers may send; the legacy scheme
	// would reject a valid quoted name, and we judge nothing by names
	// beyond looking them up.
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(sf.text))
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return Snapshot{}, &SyntaxError{Line: sf.bodyLine(pe.Line), Msg: pe.Msg}
		}
		return Snapshot{}, &SyntaxError{Msg: err.Error()}
	}
	s := mapFamilies(fams, sf.kinds)
	s.TimeNS = atNS
	s.DroppedSeries = sf.dropped
	return s, nil
}

// detect picks the engine whose families are most numerous (counts, by
// kind, over the whole body), so a body that mixes in a few foreign
// families is still read as what it is.
func detect(counts map[Kind]int) (engine Kind, gpus bool) {
	best := 0
	for _, p := range prefixes {
		if p.kind == KindDCGM {
			continue
		}
		if counts[p.kind] > best {
			best, engine = counts[p.kind], p.kind
		}
	}
	return engine, counts[KindDCGM] > 0
}

func mapFamilies(fams map[string]*dto.MetricFamily, kinds map[Kind]int) Snapshot {
	engine, hasGPU := detect(kinds)
	s := Snapshot{
		Kind:       engine,
		Values:     map[Name]float64{},
		Histograms: map[Name]Histogram{},
		Raw:        map[string]Family{},
	}
	if engine == KindUnknown && hasGPU {
		s.Kind = KindDCGM
	}
	used := map[string]bool{}
	gpus := map[string]*GPU{}
	for i := range vocabulary {
		d := &vocabulary[i]
		if engine != KindUnknown {
			mapEngine(&s, d, d.Sources[engine], fams, used)
		}
		if hasGPU {
			mapGPU(&s, d, d.Sources[KindDCGM], fams, used, gpus)
		}
	}
	ids := make([]string, 0, len(gpus))
	for id := range gpus {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		s.GPUs = append(s.GPUs, *gpus[id])
	}
	for name, mf := range fams {
		if !used[name] {
			s.Raw[name] = rawFamily(mf)
		}
	}
	return s
}

// mapEngine fills one canonical metric from the first of its sources the
// body holds.
func mapEngine(s *Snapshot, d *Def, sources []Source, fams map[string]*dto.MetricFamily, used map[string]bool) {
	for _, src := range sources {
		mf, ok := fams[src.Family]
		if !ok {
			continue
		}
		scale := src.Scale
		if scale == 0 {
			scale = 1
		}
		if d.Type == TypeHistogram {
			h, ok := sumHistograms(mf, scale)
			if !ok {
				continue
			}
			s.Histograms[d.Name] = h
		} else {
			v, ok := aggregate(mf.GetMetric(), scale, d.Mean)
			if !ok {
				continue
			}
			s.Values[d.Name] = v
		}
		used[src.Family] = true
		return
	}
}

// mapGPU fills one canonical GPU metric per GPU and over all GPUs.
func mapGPU(s *Snapshot, d *Def, sources []Source, fams map[string]*dto.MetricFamily, used map[string]bool, gpus map[string]*GPU) {
	for _, src := range sources {
		mf, ok := fams[src.Family]
		if !ok || d.Type == TypeHistogram {
			continue
		}
		scale := src.Scale
		if scale == 0 {
			scale = 1
		}
		var series []*dto.Metric
		for _, m := range mf.GetMetric() {
			v, ok := scalar(m)
			if !ok {
				continue
			}
			labels := labelMap(m)
			id := labels["gpu"]
			if mig := labels["GPU_I_ID"]; mig != "" {
				id += "/" + mig
			}
			g := gpus[id]
			if g == nil {
				g = &GPU{ID: id, UUID: labels["UUID"], Model: labels["modelName"], Values: map[Name]float64{}}
				gpus[id] = g
			}
			g.Values[d.Name] = v * scale
			series = append(series, m)
		}
		if v, ok := aggregate(series, scale, d.Mean); ok {
			s.Values[d.Name] = v
			used[src.Family] = true
			return
		}
	}
}

// scalar is the value of a counter, gauge or untyped series; NaN values
// are skipped, since one engine's NaN would otherwise erase the others'.
func scalar(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.Gauge != nil:
		v = m.Gauge.GetValue()
	case m.Counter != nil:
		v = m.Counter.GetValue()
	case m.Untyped != nil:
		v = m.Untyped.GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

func aggregate(ms []*dto.Metric, scale float64, mean bool) (float64, bool) {
	var sum float64
	n := 0
	for _, m := range ms {
		v, ok := scalar(m)
		if !ok {
			continue
		}
		sum += v * scale
		n++
	}
	if n == 0 {
		return 0, false
	}
	if mean {
		return sum / float64(n), true
	}
	return sum, true
}

func histogramOf(h *dto.Histogram, scale float64) Histogram {
	out := Histogram{Sum: h.GetSampleSum() * scale, Count: h.GetSampleCountFloat()}
	if out.Count == 0 {
		out.Count = float64(h.GetSampleCount())
	}
	out.Buckets = make([]Bucket, 0, len(h.GetBucket())+1)
	for _, b := range h.GetBucket() {
		c := b.GetCumulativeCountFloat()
		if c == 0 {
			c = float64(b.GetCumulativeCount())
		}
		out.Buckets = append(out.Buckets, Bucket{UpperBound: b.GetUpperBound() * scale, Count: c})
	}
	sort.SliceStable(out.Buckets, func(i, j int) bool { return out.Buckets[i].UpperBound < out.Buckets[j].UpperBound })
	// The text format may leave out the +Inf bucket; its count is the
	// total, and quantiles need it as the top.
	if n := len(out.Buckets); n == 0 || !math.IsInf(out.Buckets[n-1].UpperBound, 1) {
		out.Buckets = append(out.Buckets, Bucket{UpperBound: math.Inf(1), Count: out.Count})
	}
	return out
}

// sumHistograms adds a family's series bucket by bucket, as
// sum by (le) does. Series whose bounds differ from the first's cannot be
// added and are left out.
func sumHistograms(mf *dto.MetricFamily, scale float64) (Histogram, bool) {
	var out Histogram
	n := 0
	for _, m := range mf.GetMetric() {
		if m.Histogram == nil {
			continue
		}
		h := histogramOf(m.Histogram, scale)
		if n == 0 {
			out = h
			n++
			continue
		}
		if !sameBounds(out.Buckets, h.Buckets) {
			continue
		}
		for i := range out.Buckets {
			out.Buckets[i].Count += h.Buckets[i].Count
		}
		out.Count += h.Count
		out.Sum += h.Sum
		n++
	}
	return out, n > 0
}

func sameBounds(a, b []Bucket) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UpperBound != b[i].UpperBound {
			return false
		}
	}
	return true
}

func labelMap(m *dto.Metric) map[string]string {
	if len(m.GetLabel()) == 0 {
		return nil
	}
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func rawFamily(mf *dto.MetricFamily) Family {
	f := Family{Samples: make([]Sample, 0, len(mf.GetMetric()))}
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		f.Type = "counter"
	case dto.MetricType_GAUGE:
		f.Type = "gauge"
	case dto.MetricType_HISTOGRAM:
		f.Type = "histogram"
	case dto.MetricType_GAUGE_HISTOGRAM:
		f.Type = "gaugehistogram"
	case dto.MetricType_SUMMARY:
		f.Type = "summary"
	default:
		f.Type = "untyped"
	}
	for _, m := range mf.GetMetric() {
		s := Sample{Labels: labelMap(m)}
		switch {
		case m.Histogram != nil:
			h := histogramOf(m.Histogram, 1)
			s.Histogram, s.Value = &h, h.Count
		case m.Summary != nil:
			s.Value = float64(m.Summary.GetSampleCount())
		case m.Gauge != nil:
			s.Value = m.Gauge.GetValue()
		case m.Counter != nil:
			s.Value = m.Counter.GetValue()
		case m.Untyped != nil:
			s.Value = m.Untyped.GetValue()
		}
		f.Samples = append(f.Samples, s)
	}
	return f
}
