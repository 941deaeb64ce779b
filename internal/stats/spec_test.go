package stats

import (
	"errors"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/setting"
)

func TestSpecErrorsByField(t *testing.T) {
	ok := Spec{PercentileMetrics: "ttft", MetricPercentiles: "50", Buckets: "none"}
	cases := []struct {
		name  string
		spec  func(s *Spec)
		extra []string
		field string
	}{
		{"preset", func(s *Spec) { s.SLOPreset = "nope" }, nil, "SLOPreset"},
		{"goodput", func(s *Spec) { s.Goodput = []string{"ttft:soon"} }, nil, "Goodput"},
		{"extra words", nil, []string{"zz:1"}, "Goodput"},
		{"a word with no Goodput", nil, []string{"ttft:1"}, "Goodput"},
		{"a word of no SLO", func(s *Spec) { s.Goodput = []string{"ttft:1"} }, []string{"run.jsonl"}, "Goodput"},
		{"percentiles", func(s *Spec) { s.MetricPercentiles = "101" }, nil, "MetricPercentiles"},
		{"metrics", func(s *Spec) { s.PercentileMetrics = "speed" }, nil, "PercentileMetrics"},
		{"buckets", func(s *Spec) { s.Buckets = "-1" }, nil, "Buckets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			if c.spec != nil {
				c.spec(&s)
			}
			_, err := s.Options(c.extra)
			var se *setting.Error
			// The field at fault, or the first the message names.
			if !errors.As(err, &se) || len(se.Fields()) == 0 || se.Fields()[0] != c.field {
				t.Errorf("Options(%q) = %v; want a setting error of %s", c.extra, err, c.field)
			}
		})
	}
	if slo, err := (Spec{Goodput: []string{"ttft:100"}}).SLO([]string{"tpot:5"}); err != nil || slo.TPOT != 5*time.Millisecond {
		t.Errorf("SLO(tpot:5) after ttft:100 = %v, %v; want the word taken", slo, err)
	}
	bad := Spec{SessionGoodput: "ttp:soon"}
	var se *setting.Error
	if _, err := bad.SessionSLO(); !errors.As(err, &se) || se.Field != "SessionGoodput" {
		t.Errorf("session: err %v; want a setting error of SessionGoodput", err)
	}
}

func TestSpecPresetUnderGiven(t *testing.T) {
	s := Spec{SLOPreset: "chat", Goodput: []string{"ttft:123"}, SessionGoodput: "ttp:7"}
	slo, err := s.SLO(nil)
	if err != nil || slo.TTFT.Milliseconds() != 123 || slo.TPOT == 0 {
		t.Errorf("SLO = %+v, %v; want ttft 123 ms over the chat preset's tpot", slo, err)
	}
	sess, err := s.SessionSLO()
	if err != nil || sess.IsZero() {
		t.Errorf("SessionSLO = %+v, %v", sess, err)
	}
	if o, err := (Spec{}).Options(nil); err != nil || !o.SLO.IsZero() {
		t.Errorf("empty spec: %+v, %v", o, err)
	}
}
