package runspec

import (
	"errors"
	"fmt"
	"testing"

	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/stats"
)

// TestCheckGateNeeds: a toy schema holding request_goodput only with an
// SLO and p<P>_ttft_ms for each summarised percentile; each bad key is
// told what the run lacks.
func TestCheckGateNeeds(t *testing.T) {
	schema := func(so stats.Options) (map[string]any, error) {
		m := map[string]any{"completed": 1.0}
		if !so.SLO.IsZero() {
			m["request_goodput"] = 1.0
		}
		for _, p := range so.Percentiles {
			m[fmt.Sprintf("p%g_ttft_ms", p)] = 1.0
		}
		return m, nil
	}
	withSearch := func(so stats.Options) (map[string]any, error) {
		m, _ := schema(so)
		m["search_rate"] = 1.0
		return m, nil
	}
	so := stats.Options{Percentiles: []float64{50, 99}}
	for _, c := range []struct {
		expr       string
		need       GateNeed
		percentile string
	}{
		{"request_goodput<10", NeedSLO, ""},
		{"p99.9_ttft_ms>500", NeedPercentile, "99.9"},
		{"search_rate<1", NeedAlternative, ""},
		{"no_such_key>1", NeedNothing, ""},
	} {
		g, err := gate.Parse([]string{"completed>0", c.expr})
		if err != nil {
			t.Fatal(err)
		}
		err = CheckGate(g, so, schema, withSearch)
		var ke *GateKeyError
		if !errors.As(err, &ke) || ke.Need != c.need || ke.Percentile != c.percentile || ke.Expr != c.expr {
			t.Errorf("%s: %v (%+v); want need %d, percentile %q", c.expr, err, ke, c.need, c.percentile)
		}
		if ke != nil && c.need != NeedNothing && ke.Near != nil {
			t.Errorf("%s: near %q listed beside a need", c.expr, ke.Near)
		}
	}
	g, _ := gate.Parse([]string{"p99_ttft_ms>500"})
	if err := CheckGate(g, so, schema); err != nil {
		t.Errorf("a key the result holds: %v", err)
	}
}
