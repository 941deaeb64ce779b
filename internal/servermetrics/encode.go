package servermetrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
)

// The stored form of a Snapshot (a records file's scrape line carries it):
// the canonical values, histograms and GPUs, and the raw families' plain
// series (counters, gauges, untyped; at most MaxStoredRawSeries, so that a
// server exposing thousands cannot swell every line) — raw histograms and
// summaries are left out. A histogram's +Inf bucket, which JSON cannot
// hold, is its Count.
type snapshotJSON struct {
	Kind       Kind                   `json:"kind,omitempty"`
	Values     map[Name]float64       `json:"values,omitempty"`
	Histograms map[Name]histogramJSON `json:"histograms,omitempty"`
	GPUs       []gpuJSON              `json:"gpus,omitempty"`
	Raw        map[string]rawJSON     `json:"raw,omitempty"`
	Dropped    int                    `json:"dropped_series,omitempty"`
}

// MaxStoredRawSeries bounds the raw series a stored snapshot keeps.
const MaxStoredRawSeries = 256

type rawJSON struct {
	Type    string          `json:"type"`
	Samples []rawSampleJSON `json:"samples"`
}

type rawSampleJSON struct {
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

type histogramJSON struct {
	LE     []float64 `json:"le"`
	Counts []float64 `json:"counts"`
	Count  float64   `json:"count"`
	Sum    float64   `json:"sum"`
}

type gpuJSON struct {
	ID     string           `json:"id"`
	UUID   string           `json:"uuid,omitempty"`
	Model  string           `json:"model,omitempty"`
	Values map[Name]float64 `json:"values,omitempty"`
}

// MarshalJSON encodes the snapshot's stored form (TimeNS and Raw are not
// part of it: the scrape line holds the time). Values that are not finite
// are left out.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	out := snapshotJSON{Kind: s.Kind, Values: finite(s.Values), Dropped: s.DroppedSeries}
	for n, h := range s.Histograms {
		hj := histogramJSON{Count: h.Count, Sum: h.Sum, LE: []float64{}, Counts: []float64{}}
		for _, b := range h.Buckets {
			if math.IsInf(b.UpperBound, 1) {
				continue
			}
			hj.LE, hj.Counts = append(hj.LE, b.UpperBound), append(hj.Counts, b.Count)
		}
		if math.IsNaN(hj.Sum) || math.IsInf(hj.Sum, 0) {
			hj.Sum = 0
		}
		if out.Histograms == nil {
			out.Histograms = map[Name]histogramJSON{}
		}
		out.Histograms[n] = hj
	}
	for _, g := range s.GPUs {
		out.GPUs = append(out.GPUs, gpuJSON{ID: g.ID, UUID: g.UUID, Model: g.Model, Values: finite(g.Values)})
	}
	names := make([]string, 0, len(s.Raw))
	for n := range s.Raw {
		names = append(names, n)
	}
	sort.Strings(names) // which series fit under the cap must not depend on map order
	kept := 0
	for _, n := range names {
		f := s.Raw[n]
		var r rawJSON
		for _, smp := range f.Samples {
			if smp.Histogram != nil || math.IsNaN(smp.Value) || math.IsInf(smp.Value, 0) || kept >= MaxStoredRawSeries {
				continue
			}
			r.Samples = append(r.Samples, rawSampleJSON{Labels: smp.Labels, Value: smp.Value})
			kept++
		}
		if len(r.Samples) > 0 {
			if out.Raw == nil {
				out.Raw = map[string]rawJSON{}
			}
			r.Type = f.Type
			out.Raw[n] = r
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes the stored form; the time is the caller's to set.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var in snapshotJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*s = Snapshot{Kind: in.Kind, Values: in.Values, DroppedSeries: in.Dropped}
	for n, hj := range in.Histograms {
		if len(hj.LE) != len(hj.Counts) {
			return fmt.Errorf("histogram %s: %d bounds for %d counts", n, len(hj.LE), len(hj.Counts))
		}
		h := Histogram{Count: hj.Count, Sum: hj.Sum}
		for i, le := range hj.LE {
			if i > 0 && !(le > hj.LE[i-1]) {
				return fmt.Errorf("histogram %s: bounds not ascending", n)
			}
			h.Buckets = append(h.Buckets, Bucket{UpperBound: le, Count: hj.Counts[i]})
		}
		h.Buckets = append(h.Buckets, Bucket{UpperBound: math.Inf(1), Count: hj.Count})
		if s.Histograms == nil {
			s.Histograms = map[Name]Histogram{}
		}
		s.Histograms[n] = h
	}
	for _, g := range in.GPUs {
		if g.ID == "" {
			return errors.New("a GPU without an id")
		}
		s.GPUs = append(s.GPUs, GPU(g))
	}
	for n, r := range in.Raw {
		f := Family{Type: r.Type}
		for _, smp := range r.Samples {
			f.Samples = append(f.Samples, Sample{Labels: smp.Labels, Value: smp.Value})
		}
		if s.Raw == nil {
			s.Raw = map[string]Family{}
		}
		s.Raw[n] = f
	}
	return nil
}

func finite(m map[Name]float64) map[Name]float64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[Name]float64, len(m))
	for k, v := range m {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[k] = v
		}
	}
	return out
}
