package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Cond
	}{
		{"gt", "p99_ttft_ms>500", Cond{Expr: "p99_ttft_ms>500", Key: "p99_ttft_ms", Op: OpGT, Value: 500}},
		{"spaces", "  request_goodput < 10 ", Cond{Expr: "request_goodput < 10", Key: "request_goodput", Op: OpLT, Value: 10}},
		{"ge", "failed>=1", Cond{Expr: "failed>=1", Key: "failed", Op: OpGE, Value: 1}},
		{"le", "slo_attainment<=0.99", Cond{Expr: "slo_attainment<=0.99", Key: "slo_attainment", Op: OpLE, Value: 0.99}},
		{"eq", "completed==0", Cond{Expr: "completed==0", Key: "completed", Op: OpEQ, Value: 0}},
		{"ne", "failed!=0", Cond{Expr: "failed!=0", Key: "failed", Op: OpNE, Value: 0}},
		{"dotted", "sweep.goodput_peak.load<8", Cond{Expr: "sweep.goodput_peak.load<8", Key: "sweep.goodput_peak.load", Op: OpLT, Value: 8}},
		{"dotted percentile", "p99.9_ttft_ms>1e3", Cond{Expr: "p99.9_ttft_ms>1e3", Key: "p99.9_ttft_ms", Op: OpGT, Value: 1000}},
		{"negative", "x>-1.5", Cond{Expr: "x>-1.5", Key: "x", Op: OpGT, Value: -1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Parse([]string{tt.in})
			if err != nil {
				t.Fatalf("Parse(%q) error %v", tt.in, err)
			}
			if diff := cmp.Diff([]Cond{tt.want}, g.Conds); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no operator", "p99_ttft_ms 500", "no operator"},
		{"double", "p99_ttft_ms>>500", "not a number"},
		{"bang alone", "failed!0", `operator "!"`},
		{"single equals", "failed=0", `operator "="`},
		{"no key", ">500", "no key"},
		{"bad key", "p99 ttft>5", "only letters"},
		{"empty part", "sweep..load>1", "empty part"},
		{"no number", "failed>", "not a number"},
		{"nan", "failed>NaN", "not a number"},
		{"words", "failed>lots", "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]string{"completed>0", tt.in})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.in) {
				t.Errorf("Parse(%q) error = %v; want one naming the expression and containing %q", tt.in, err, tt.want)
			}
			var ee *ExprError
			if !errors.As(err, &ee) || ee.Expr != tt.in {
				t.Errorf("Parse(%q) error = %v; want an ExprError on %q", tt.in, err, tt.in)
			}
			if msg := fmt.Sprint(err); !strings.HasPrefix(msg, strconv.Quote(tt.in)+": ") || strings.Contains(msg, "--") {
				t.Errorf("Parse(%q) error = %q; want it to start with the quoted expression and name no flag", tt.in, err)
			}
		})
	}
}

func TestExprError(t *testing.T) {
	inner := errors.New("no operator")
	e := &ExprError{Expr: "p99_ttft_ms 5", Err: inner}
	if got, want := e.Error(), `"p99_ttft_ms 5": no operator`; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	wrapped := fmt.Errorf("sweep: %w", e)
	var ee *ExprError
	if !errors.As(wrapped, &ee) || ee != e || !errors.Is(wrapped, inner) {
		t.Errorf("errors.As/Is through %v: got %v; want the ExprError and its cause", wrapped, ee)
	}
}

const result = `{
  "p99_ttft_ms": 612.3,
  "p99.9_ttft_ms": 900,
  "request_goodput": null,
  "request_rate": "inf",
  "failed": 0,
  "model_id": "m",
  "slo": {"good": 95, "constraints": [{"name": "ttft", "attainment": 0.95}]},
  "sweep": {"goodput_peak": {"load": 16, "request_goodput": 9.5}},
  "levels": [{"p99_ttft_ms": 50}, {"p99_ttft_ms": 2500}]
}`

func TestCheck(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal([]byte(result), &m); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		expr string
		want []string
	}{
		{"fails", "p99_ttft_ms>500", []string{"p99_ttft_ms>500: p99_ttft_ms is 612.3"}},
		{"passes", "p99_ttft_ms>1000", nil},
		{"boundary inclusive", "p99_ttft_ms>=612.3", []string{"p99_ttft_ms>=612.3: p99_ttft_ms is 612.3"}},
		{"boundary exclusive", "p99_ttft_ms<612.3", nil},
		{"dotted key with dot", "p99.9_ttft_ms>800", []string{"p99.9_ttft_ms>800: p99.9_ttft_ms is 900"}},
		{"nested", "sweep.goodput_peak.request_goodput<10", []string{"sweep.goodput_peak.request_goodput<10: sweep.goodput_peak.request_goodput is 9.5"}},
		{"array index", "levels.1.p99_ttft_ms>2000", []string{"levels.1.p99_ttft_ms>2000: levels.1.p99_ttft_ms is 2500"}},
		{"array in object", "slo.constraints.0.attainment<0.99", []string{"slo.constraints.0.attainment<0.99: slo.constraints.0.attainment is 0.95"}},
		{"array out of range", "levels.5.p99_ttft_ms>1", []string{"levels.5.p99_ttft_ms>1: no key levels.5.p99_ttft_ms in the result"}},
		{"missing key fails", "p95_ttft_ms>1", []string{"p95_ttft_ms>1: no key p95_ttft_ms in the result"}},
		{"null fails", "request_goodput<10", []string{`request_goodput<10: request_goodput is null, not a number`}},
		{"string not number", "model_id>1", []string{`model_id>1: model_id is "m", not a number`}},
		{"object not number", "slo>1", []string{`slo>1: slo is an object, not a number`}},
		{"numeric string", "request_rate<1", nil},
		{"eq zero", "failed==0", []string{"failed==0: failed is 0"}},
		{"ne zero", "failed!=0", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Parse([]string{tt.expr})
			if err != nil {
				t.Fatal(err)
			}
			got := g.Check(m)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check(%q) mismatch (-want +got):\n%s", tt.expr, diff)
			}
		})
	}
}

func TestCheckSeveral(t *testing.T) {
	g, err := Parse([]string{"p99_ttft_ms>500", "failed>0", "slo.good<99"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(result), &m); err != nil {
		t.Fatal(err)
	}
	got := g.Check(m)
	want := []string{"p99_ttft_ms>500: p99_ttft_ms is 612.3", "slo.good<99: slo.good is 95"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", diff)
	}
	if got := (Gate{}).Check(m); len(got) != 0 {
		t.Errorf("zero Gate Check = %v; want nothing", got)
	}
}

// FuzzParse checks that Parse never panics, and that what it accepts
// re-parses from Cond.Expr to the same condition.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99_ttft_ms>500", "a<=1", "b != 2", "x==-1e9", ">", "a>>", "a.b.c>=0.5", "!", "=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := Parse([]string{s})
		if err != nil {
			return
		}
		c := g.Conds[0]
		g2, err := Parse([]string{c.Expr})
		if err != nil {
			t.Fatalf("Parse(%q) ok but its Expr %q fails: %v", s, c.Expr, err)
		}
		if diff := cmp.Diff(c, g2.Conds[0]); diff != "" {
			t.Fatalf("reparse of %q differs:\n%s", s, diff)
		}
		_ = g.Check(map[string]any{c.Key: 1.0})
	})
}

func TestValidate(t *testing.T) {
	var schema map[string]any
	err := json.Unmarshal([]byte(`{
		"p99_ttft_ms": 0, "p99.9_ttft_ms": 0, "p99_tpot_ms": 0, "p99_itl_ms": 0, "p99_e2el_ms": 0, "mean_ttft_ms": 0,
		"request_goodput": null, "model_id": "m", "completed": 0,
		"slo": {"good": 0, "spec": ""}, "buckets": [{"p99_ttft_ms": 0}], "empty": [],
		"conditions": {"input_len": {"p50": 0}}
	}`), &schema)
	if err != nil {
		t.Fatal(err)
	}
	schema["findings"] = []any{map[string]any{"id": "", "evidence": Any}}
	tests := []struct {
		expr    string
		problem string   // "" means valid
		near    []string // checked when problem is set
	}{
		{expr: "p99_ttft_ms>500"},
		{expr: "p99.9_ttft_ms>500"},
		{expr: "buckets.2.p99_ttft_ms>1"},          // any index: element 0 stands for all
		{expr: "conditions.input_len.p50>1"},       // nested objects
		{expr: "findings.0.evidence.whatever.x>1"}, // below Any
		{expr: "model_id>1"},                       // a string may hold a number
		// Typos first (within 3 edits: 1, 3, 3), then keys sharing its
		// words: buckets.0.p99_ttft_ms shares p99 and ttft, p99_itl_ms p99
		// (4 edits, the nearest of those).
		{expr: "p99_ttft_msx>500", problem: "is not a key of the result", near: []string{"p99_ttft_ms", "p99.9_ttft_ms", "p99_tpot_ms", "buckets.0.p99_ttft_ms", "p99_itl_ms"}},
		// No typo: the keys sharing "p99", by edit distance (7, 8, 8, 8, 9).
		{expr: "p99_nonsense_ms>5", problem: "is not a key of the result", near: []string{"p99_e2el_ms", "p99_itl_ms", "p99_tpot_ms", "p99_ttft_ms", "p99.9_ttft_ms"}},
		{expr: "buckets.x.p99_ttft_ms>1", problem: "is not a key"},
		{expr: "empty.0>1", problem: "is not a key"},
		{expr: "request_goodput<10", problem: "is always null in this run's result"},
		{expr: "slo>1", problem: "is an object, not a number", near: []string{"slo.good", "slo.spec"}},
		{expr: "buckets>1", problem: "is an array, not a number: name an element, e.g. buckets.0"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			g, err := Parse([]string{tt.expr})
			if err != nil {
				t.Fatal(err)
			}
			err = g.Validate(schema)
			if tt.problem == "" {
				if err != nil {
					t.Errorf("Validate(%q) = %v; want nil", tt.expr, err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || !strings.Contains(ke.Problem, tt.problem) {
				t.Fatalf("Validate(%q) = %v; want a KeyError %q", tt.expr, err, tt.problem)
			}
			if tt.near != nil {
				if diff := cmp.Diff(tt.near, ke.Near); diff != "" {
					t.Errorf("Validate(%q) near (-want +got):\n%s", tt.expr, diff)
				}
			}
			if msg := err.Error(); !strings.HasPrefix(msg, strconv.Quote(tt.expr)+": ") || strings.Contains(msg, "--") {
				t.Errorf("error %q; want it to start with the quoted expression and name no flag", err)
			}
		})
	}
}

// TestJudgeIntervals works each case out by hand on p99_ttft_ms = 820
// with its interval [760, 900]: a bound below the whole interval fails,
// one above it passes, one inside it is inconclusive; a null interval
// leaves the value to decide and says so; no interval key is the plain
// check; == and != never look at the interval.
func TestJudgeIntervals(t *testing.T) {
	res := map[string]any{
		"p99_ttft_ms": 820.0, "p99_ttft_ms_ci": []any{760.0, 900.0},
		"p99_tpot_ms": 40.0, "p99_tpot_ms_ci": nil,
		"completed": 100.0,
		"levels":    []any{map[string]any{"request_goodput": 5.0, "request_goodput_ci": []any{4.0, 6.0}}},
	}
	for _, tt := range []struct {
		expr                        string
		failed, inconclusive, noted bool
	}{
		{"p99_ttft_ms>700", true, false, false},  // 760 and 900 both > 700
		{"p99_ttft_ms>=760", true, false, false}, // the low end on the bound still holds
		{"p99_ttft_ms>950", false, false, false}, // neither end > 950
		{"p99_ttft_ms>800", false, true, false},  // 760 no, 900 yes
		{"p99_ttft_ms<800", false, true, false},
		{"p99_ttft_ms<700", false, false, false},
		{"p99_ttft_ms==820", true, false, false}, // equality: the value
		{"p99_ttft_ms!=820", false, false, false},
		{"p99_tpot_ms>30", true, false, true}, // no interval: 40 > 30 decides
		{"p99_tpot_ms>50", false, false, true},
		{"completed<1000", true, false, false}, // no _ci key: plain
		{"levels.0.request_goodput<5.5", false, true, false},
		{"levels.0.request_goodput<7", true, false, false},
		{"p99_ttft_ms_ci.1>850", true, false, false}, // the bound itself, judged as a value
	} {
		g, err := Parse([]string{tt.expr})
		if err != nil {
			t.Fatal(err)
		}
		v := g.Judge(res)
		if got := [3]bool{len(v.Failed) > 0, len(v.Inconclusive) > 0, len(v.Notes) > 0}; got != [3]bool{tt.failed, tt.inconclusive, tt.noted} {
			t.Errorf("%s: failed %q, inconclusive %q, notes %q; want failed %v, inconclusive %v, noted %v",
				tt.expr, v.Failed, v.Inconclusive, v.Notes, tt.failed, tt.inconclusive, tt.noted)
		}
	}
	g, _ := Parse([]string{"p99_ttft_ms>800"})
	if v := g.Judge(res); len(v.Inconclusive) != 1 || v.Inconclusive[0] != "p99_ttft_ms>800: p99_ttft_ms is 820, but its interval [760, 900] holds 800" {
		t.Errorf("inconclusive line %q", v.Inconclusive)
	}
	g, _ = Parse([]string{"p99_ttft_ms>700"})
	if v := g.Judge(res); len(v.Failed) != 1 || v.Failed[0] != "p99_ttft_ms>700: p99_ttft_ms is 820 [760, 900]" {
		t.Errorf("failed line %q", v.Failed)
	}
}
