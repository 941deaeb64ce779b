package runspec

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/shard"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/workload"
)

func f64(v float64) *float64 { return &v }

// settingErr is err's *setting.Error, failing the test if it is not one.
func asSettingErr(t *testing.T, err error) *setting.Error {
	t.Helper()
	var se *setting.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *setting.Error", err)
	}
	return se
}

func TestLoadSpecErrors(t *testing.T) {
	ok := func() LoadSpec {
		return LoadSpec{RequestRate: "inf", Burstiness: 1, NumPrompts: 10, RetryBackoff: "exponential:500ms,8s,full"}
	}
	cases := []struct {
		name  string
		edit  func(*LoadSpec)
		given []string
		want  string // the error with field paths
	}{
		{"rate", func(s *LoadSpec) { s.RequestRate = "fast" }, nil, `RequestRate "fast": want a positive number of requests/s or inf`},
		{"rate zero", func(s *LoadSpec) { s.RequestRate = "0" }, nil, `RequestRate "0": want a positive number of requests/s or inf`},
		{"burstiness", func(s *LoadSpec) { s.Burstiness = 0 }, nil, "Burstiness 0: want > 0"},
		{"concurrency", func(s *LoadSpec) { s.MaxConcurrency = -1 }, nil, "MaxConcurrency -1: want ≥ 0"},
		{"huge concurrency", func(s *LoadSpec) { s.MaxConcurrency = 1 << 30 }, nil, "MaxConcurrency 1073741824: want at most 16777216"},
		{"huge burstiness", func(s *LoadSpec) { s.Burstiness = 1e300 }, nil, "Burstiness 1e+300: want at most 1e+15"},
		{"huge rate", func(s *LoadSpec) { s.RequestRate = "1e308" }, nil, `RequestRate "1e308": want at most 1e+07 requests/s, or inf`},
		{"huge ramp", func(s *LoadSpec) { s.RampUpStrategy, s.RampUpStartRPS, s.RampUpEndRPS = "linear", f64(1), f64(1e300) }, nil, "RampUpEndRPS 1e+300: want at most 1e+07 requests/s"},
		{"prompts", func(s *LoadSpec) { s.NumPrompts = -1 }, nil, "NumPrompts -1: want ≥ 0"},
		{"warmups", func(s *LoadSpec) { s.NumWarmups = -2 }, nil, "NumWarmups -2: want ≥ 0"},
		{"duration", func(s *LoadSpec) { s.Duration = -time.Second }, nil, "Duration -1s: want ≥ 0"},
		{"nothing to send", func(s *LoadSpec) { s.NumPrompts = 0 }, nil, "NumPrompts 0 needs Duration"},
		{"rates without strategy", func(s *LoadSpec) { s.RampUpStartRPS = f64(1) }, nil, "RampUpStartRPS and RampUpEndRPS need RampUpStrategy linear or exponential"},
		{"strategy", func(s *LoadSpec) { s.RampUpStrategy = "sigmoid" }, nil, `RampUpStrategy "sigmoid": want linear or exponential`},
		{"one rate", func(s *LoadSpec) { s.RampUpStrategy, s.RampUpStartRPS = "linear", f64(1) }, nil, "RampUpStrategy linear needs both RampUpStartRPS and RampUpEndRPS"},
		{"ramp and rate", func(s *LoadSpec) {
			s.RampUpStrategy, s.RampUpStartRPS, s.RampUpEndRPS, s.RequestRate = "linear", f64(1), f64(2), "5"
		}, nil, "RampUpStrategy sets the request rate: leave RequestRate at inf (it is 5)"},
		{"exponential from 0", func(s *LoadSpec) { s.RampUpStrategy, s.RampUpStartRPS, s.RampUpEndRPS = "exponential", f64(0), f64(2) }, nil,
			"RampUpStartRPS 0: an exponential ramp cannot start at 0 requests/s"},
		{"ramp down", func(s *LoadSpec) { s.RampUpStrategy, s.RampUpStartRPS, s.RampUpEndRPS = "linear", f64(3), f64(2) }, nil,
			"RampUpEndRPS 2 is below RampUpStartRPS 3: the ramp goes up"},
		{"ramp by duration", func(s *LoadSpec) {
			s.RampUpStrategy, s.RampUpStartRPS, s.RampUpEndRPS, s.Duration = "linear", f64(1), f64(2), time.Second
		}, nil, "RampUpStrategy ramps over NumPrompts requests: give NumPrompts"},
	}
	for _, c := range cases {
		s := ok()
		c.edit(&s)
		given := func(f string) bool {
			for _, g := range c.given {
				if g == f {
					return true
				}
			}
			return false
		}
		_, err := s.Level(given)
		if got := asSettingErr(t, err).Error(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	s := ok()
	if _, err := s.Level(nil); err != nil {
		t.Fatalf("a good spec: %v", err)
	}
	// A duration without NumPrompts given sends for the duration only.
	s.Duration = time.Minute
	if lv, err := s.Level(nil); err != nil || lv.NumPrompts != 0 {
		t.Errorf("duration alone: %+v, %v; want 0 prompts", lv, err)
	}
	if lv, err := s.Level(func(f string) bool { return f == "NumPrompts" }); err != nil || lv.NumPrompts != 10 {
		t.Errorf("duration and prompts given: %+v, %v; want 10 prompts", lv, err)
	}
}

func TestLoadSpecRetry(t *testing.T) {
	cases := []struct {
		spec LoadSpec
		want string
	}{
		{LoadSpec{Retries: 101, RetryBackoff: "constant:0"}, "Retries 101: want 0 to 100"},
		{LoadSpec{Retries: 2, RetryBackoff: "exponential:2s,1s"}, `RetryBackoff "exponential:2s,1s": the cap is below the base (want exponential:BASE,CAP[,none|full|equal] or constant:WAIT)`},
		{LoadSpec{RetryBackoff: "constant:0", RetryIgnoreRetryAfter: true}, "RetryIgnoreRetryAfter needs Retries"},
	}
	for _, c := range cases {
		_, err := c.spec.Retry()
		if got := asSettingErr(t, err).Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.spec, got, c.want)
		}
	}
	p, err := (&LoadSpec{Retries: 3, RetryBackoff: "constant:10ms", RetryIgnoreRetryAfter: true}).Retry()
	if err != nil || p == nil || p.Max != 3 || !p.IgnoreRetryAfter || p.Base != 10*time.Millisecond {
		t.Errorf("Retry = %+v, %v", p, err)
	}
	if p, err := (&LoadSpec{RetryBackoff: "constant:0"}).Retry(); p != nil || err != nil {
		t.Errorf("no retries: %+v, %v", p, err)
	}
}

func TestOutputSpec(t *testing.T) {
	s := OutputSpec{ResultDir: "out", Records: "r.jsonl", SaveResult: true, HTML: "x.html", Metadata: []string{"a=1", " b =2=3"}}
	o := s.Output("/wd")
	if o.Dir != "/wd/out" || o.Records != "/wd/r.jsonl" || !o.Saving || !o.KeepRecords || o.KeepText {
		t.Errorf("Output = %+v", o)
	}
	s.AppendResult, s.Records, s.ResultDir = true, "none", "/abs"
	if o := s.Output("/wd"); o.Dir != "/abs" || o.Records != "none" || o.Saving {
		t.Errorf("Output = %+v; want the absolute dir, no records, appending", o)
	}
	m, err := s.Meta()
	if err != nil || m["a"] != "1" || m["b"] != "2=3" {
		t.Errorf("Meta = %v, %v", m, err)
	}
	s.Metadata = []string{"=v"}
	_, err = s.Meta()
	if got, want := asSettingErr(t, err).Error(), `Metadata "=v": want KEY=VALUE`; got != want {
		t.Errorf("Meta: %q, want %q", got, want)
	}
}

func TestWorkloadSpec(t *testing.T) {
	for _, c := range []struct {
		spec WorkloadSpec
		want string
	}{
		{WorkloadSpec{CustomOutputLen: -2}, "CustomOutputLen -2: want a number of tokens, or 0 or -1 for the file's"},
		{WorkloadSpec{Calibrate: "on"}, `Calibrate "on": want auto or off`},
	} {
		_, err := c.spec.Workload(workload.Options{})
		if got := asSettingErr(t, err).Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.spec, got, c.want)
		}
	}
	w, err := (&WorkloadSpec{Calibrate: "OFF", CustomOutputLen: -1}).Workload(workload.Options{DatasetName: "custom"})
	if err != nil || w.Calibrate || w.OutputTokens != 0 || w.Options.DatasetName != "custom" {
		t.Errorf("Workload = %+v, %v", w, err)
	}
	if w, _ := (&WorkloadSpec{CustomOutputLen: 7}).Workload(workload.Options{}); !w.Calibrate || w.OutputTokens != 7 {
		t.Errorf("Workload = %+v; want calibrated, 7 output tokens", w)
	}
}

func TestOutputSpecLive(t *testing.T) {
	start, stop := (&OutputSpec{}).Live(stats.Options{}, func(string) {})
	if sinks, err := start(&runlog.Meta{}); sinks != nil || err != nil {
		t.Errorf("no address: %v, %v; want nothing served", sinks, err)
	}
	stop()
	start, stop = (&OutputSpec{MetricsListen: "127.0.0.1:99999"}).Live(stats.Options{}, func(string) {})
	defer stop()
	_, err := start(&runlog.Meta{})
	if se := asSettingErr(t, err); se.Field != "MetricsListen" || !strings.Contains(se.Error(), "99999") {
		t.Errorf("bad address: %v; want a MetricsListen error naming it", se)
	}
}

// settingErr checks that err, returned by call, is a *setting.Error
// starting with want (fields named by their paths), or nil when want is "".
func settingErr(t *testing.T, call string, err error, want string) {
	t.Helper()
	var se *setting.Error
	switch {
	case want == "" && err != nil:
		t.Errorf("%s = %v; want no error", call, err)
	case want != "" && (!errors.As(err, &se) || !strings.HasPrefix(se.Error(), want)):
		t.Errorf("%s = %v (%T); want a *setting.Error %q", call, err, err, want)
	}
}

func TestLoadShardOfReadsTheIndex(t *testing.T) {
	l := LoadSpec{Spec: shard.Spec{Shards: 4}}
	sh, _, err := l.ShardOf(func(k string) string { return map[string]string{shard.JobIndexEnv: "2"}[k] }, time.Now())
	if err != nil || sh == nil || sh.Index != 2 {
		t.Errorf("ShardOf = %+v, %v; want shard 2 of 4", sh, err)
	}
	if _, _, err := l.ShardOf(nil, time.Now()); err == nil {
		t.Error("ShardOf without an index: want an error")
	}
}
