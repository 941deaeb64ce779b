package stats

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
)

func TestParseSLO(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    SLO
		wantErr string
	}{
		{"empty", "", SLO{}, ""},
		{"vLLM style spaces", "ttft:2000 tpot:50 e2el:3000 ttp:1000",
			SLO{TTFT: 2 * time.Second, TPOT: 50 * time.Millisecond, E2E: 3 * time.Second, TTP: time.Second}, ""},
		{"commas", "ttft:2000,tpot:50", SLO{TTFT: 2 * time.Second, TPOT: 50 * time.Millisecond}, ""},
		{"commas and spaces", "ttft:2000, e2e:10", SLO{TTFT: 2 * time.Second, E2E: 10 * time.Millisecond}, ""},
		{"fraction of a ms", "tpot:12.5", SLO{TPOT: 12500 * time.Microsecond}, ""},
		{"upper case name", "TTFT:1", SLO{TTFT: time.Millisecond}, ""},
		{"missing colon", "ttft2000", SLO{}, `"ttft2000"`},
		{"unknown metric", "ttft:1 itl:5", SLO{}, `unknown metric "itl"`},
		{"not a number", "ttft:fast", SLO{}, `"fast" is not a number`},
		{"zero", "ttft:0", SLO{}, "positive"},
		{"negative", "tpot:-5", SLO{}, "positive"},
		{"NaN", "tpot:NaN", SLO{}, "positive"},
		{"Inf", "tpot:Inf", SLO{}, "positive"},
		{"huge", "tpot:1e300", SLO{}, "positive"},
		{"twice", "ttft:1 ttft:2", SLO{}, "twice"},
		{"below a ns", "ttft:1e-9", SLO{}, "nanosecond"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSLO(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSLO(%q) error = %v; want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSLO(%q) error = %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseSLO(%q) = %+v; want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestSLOString(t *testing.T) {
	s := SLO{TTFT: 2 * time.Second, TPOT: 12500 * time.Microsecond, TTP: time.Second}
	if got, want := s.String(), "ttft:2000 tpot:12.5 ttp:1000"; got != want {
		t.Errorf("SLO.String() = %q; want %q", got, want)
	}
}

func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"", "ttft:2000 tpot:50", "e2el:1,ttp:2", "ttft:", ":5", "tpot:1e-7", "ttft:1 ttft:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseSLO(s)
		if err != nil {
			return
		}
		for i, l := range slo.limits() {
			if l < 0 {
				t.Fatalf("ParseSLO(%q): %s limit %v < 0", s, sloNames[i], l)
			}
		}
		// What String renders must parse back to the same SLO.
		back, err := ParseSLO(slo.String())
		if err != nil || back != slo {
			t.Fatalf("ParseSLO(%q).String() = %q re-parses to %+v, %v; want %+v", s, slo.String(), back, err, slo)
		}
	})
}

func TestParsePercentiles(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []float64
		wantErr bool
	}{
		{"empty is default", "", nil, false},
		{"vLLM default", "99", []float64{99}, false},
		{"list", "50,90,99,99.9", []float64{50, 90, 99, 99.9}, false},
		{"bounds", "0,100", []float64{0, 100}, false},
		{"above 100", "101", nil, true},
		{"negative", "-1", nil, true},
		{"word", "p99", nil, true},
		{"NaN", "NaN", nil, true},
		{"duplicate", "99,99", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePercentiles(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePercentiles(%q) error = %v; want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParsePercentiles(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func FuzzParsePercentiles(f *testing.F) {
	f.Add("50,90,99.9")
	f.Add("0, 100")
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePercentiles(s)
		if err != nil {
			return
		}
		for _, p := range ps {
			if !(p >= 0 && p <= 100) {
				t.Fatalf("ParsePercentiles(%q) accepted %v", s, p)
			}
		}
	})
}

func TestParseMetrics(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{"empty", "", nil, false},
		{"vLLM default", "ttft,tpot,itl", []string{"ttft", "tpot", "itl"}, false},
		{"ours", "ttp,response", []string{"ttp", "response"}, false},
		{"all", "all", AllMetrics, false},
		{"unknown", "ttft,latency", nil, true},
		{"itl_token is not selectable alone", "itl_token", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMetrics(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseMetrics(%q) error = %v; want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseMetrics(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func FuzzParseMetrics(f *testing.F) {
	f.Add("ttft,tpot,itl,e2el")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMetrics(s)
		if err != nil {
			return
		}
		o := Options{Metrics: ms}.normalized()
		if len(o.Metrics) > len(AllMetrics) {
			t.Fatalf("ParseMetrics(%q) normalises to %v", s, o.Metrics)
		}
	})
}

func TestParseBuckets(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []int
		wantErr bool
	}{
		{"empty is default", "", nil, false},
		{"none", "none", []int{}, false},
		{"K suffix", "1K,8K", []int{1024, 8192}, false},
		{"tokens, unsorted", "2048,512,32k", []int{512, 2048, 32768}, false},
		{"zero", "0", nil, true},
		{"negative", "-5", nil, true},
		{"junk", "1K,big", nil, true},
		{"duplicate", "1K,1024", nil, true},
		{"overflow", "99999999999999999K", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBuckets(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseBuckets(%q) error = %v; want error %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseBuckets(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func FuzzParseBuckets(f *testing.F) {
	f.Add("1K,8K")
	f.Add("none")
	f.Fuzz(func(t *testing.T, s string) {
		bs, err := ParseBuckets(s)
		if err != nil {
			return
		}
		for i, b := range bs {
			if b <= 0 || (i > 0 && b <= bs[i-1]) {
				t.Fatalf("ParseBuckets(%q) = %v: not positive and increasing", s, bs)
			}
		}
		if got := BucketLabels(bs); len(bs) > 0 && len(got) != len(bs)+1 {
			t.Fatalf("BucketLabels(%v) = %v", bs, got)
		}
	})
}

func TestBucketLabels(t *testing.T) {
	tests := []struct {
		edges []int
		want  []string
	}{
		{[]int{1024, 8192}, []string{"<1K", "1K-8K", ">=8K"}},
		{[]int{500}, []string{"<500", ">=500"}},
		{[]int{512, 2048, 32768}, []string{"<512", "512-2K", "2K-32K", ">=32K"}},
		{nil, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, BucketLabels(tt.edges)); diff != "" {
			t.Errorf("BucketLabels(%v) mismatch (-want +got):\n%s", tt.edges, diff)
		}
	}
}

func TestOptionsNormalized(t *testing.T) {
	tests := []struct {
		name string
		in   Options
		want Options
	}{
		{"defaults", Options{}, Options{Percentiles: DefaultPercentiles, Metrics: AllMetrics, Buckets: DefaultBuckets}},
		{"cleaned",
			Options{Percentiles: []float64{99, -1, 99, 101, 50}, Metrics: []string{"e2el", "bogus", "ttft"}, Buckets: []int{8192, 0, 1024, 1024}},
			Options{Percentiles: []float64{99, 50}, Metrics: []string{"ttft", "e2el"}, Buckets: []int{1024, 8192}}},
		{"no buckets", Options{Buckets: []int{}}, Options{Percentiles: DefaultPercentiles, Metrics: AllMetrics, Buckets: []int{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.in.normalized()); diff != "" {
				t.Errorf("normalized() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestMetric(t *testing.T) {
	// Intended at 0, sent at 5 ms; a hidden token at 100 ms, visible ones at
	// 130 and 160 ms. TTFT 100 − 5 = 95 ms; TTP 130 − 5 = 125 ms; TPOT
	// (160 − 100) / (3 − 1) = 30 ms; E2E 160 − 5 = 155 ms; response
	// 160 − 0 = 160 ms.
	r := &runlog.Record{Intended: 0, Sent: 5e6, Chunks: []runlog.Chunk{
		{T: 100e6, Tokens: 1}, {T: 130e6, Tokens: 1, Visible: true}, {T: 160e6, Tokens: 1, Visible: true}}}
	want := map[string]time.Duration{MetricTTFT: 95 * time.Millisecond, MetricTTP: 125 * time.Millisecond,
		MetricTPOT: 30 * time.Millisecond, MetricE2E: 155 * time.Millisecond, MetricResponse: 160 * time.Millisecond}
	for name, w := range want {
		if d, ok := RequestMetric(r, name); !ok || d != w || !IsRequestMetric(name) {
			t.Errorf("RequestMetric(%s) = %v, %v (known %v); want %v, true", name, d, ok, IsRequestMetric(name), w)
		}
	}
	for _, name := range []string{MetricITL, MetricITLToken, "nope"} {
		if _, ok := RequestMetric(r, name); ok || IsRequestMetric(name) {
			t.Errorf("RequestMetric(%s) ok; want false (not per request)", name)
		}
	}
}
