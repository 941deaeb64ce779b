package simvalidate

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/validate"
	"github.com/goodput/goodput/internal/simrun"
	"github.com/goodput/goodput/internal/workload"
)

// simRecords writes the records of a simulated run under load to a
// goodput records file in dir and returns its path.
func simRecords(t *testing.T, dir string, load simrun.Load) string {
	t.Helper()
	return simRecordsOn(t, dir, sim.DefaultConfig(), nil, load)
}

// simRecordsOn is simRecords on engine cfg, the meta's metadata md.
func simRecordsOn(t *testing.T, dir string, cfg sim.Config, md map[string]string, load simrun.Load) string {
	t.Helper()
	eng, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := workload.NewRandom(workload.RandomConfig{InputLen: 800, OutputLen: 120, RangeRatio: 0.5, NumPrompts: 60, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := runlog.NewWriter(&b)
	if err := w.WriteMeta(&runlog.Meta{Tool: "goodput", Command: "bench", Model: "m", Levels: []runlog.Level{load.Level}, Metadata: md}); err != nil {
		t.Fatal(err)
	}
	if _, err := simrun.Run(context.Background(), eng, ds, load, w.Write); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "run.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSelfReplay validates the simulator against its own records on the
// same engine: the replay sends the same lengths at the same moments (or,
// closed loop, in the same order at the same concurrency), so every
// figure's error is zero, every TOST equivalent and every KS D = 0.
func TestSelfReplay(t *testing.T) {
	for _, c := range []struct {
		name string
		load simrun.Load
	}{
		{"open loop", simrun.Load{Level: runlog.Level{RequestRate: 8, Burstiness: 1, NumPrompts: 60}, Seed: 2}},
		{"closed loop", simrun.Load{Level: runlog.Level{MaxConcurrency: 8, NumPrompts: 60}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := simRecords(t, t.TempDir(), c.load)
			m, err := Validate(context.Background(), Spec{Base: sim.DefaultConfig(), Inputs: []Input{{Truth: p}}})
			if err != nil {
				t.Fatal(err)
			}
			cells := m.Sections[0].Cells
			if len(cells) != 4*4+2 {
				t.Fatalf("Validate gave %d cells; want 18 (TTFT, TPOT, ITL, E2E × 4 stats, 2 throughputs)", len(cells))
			}
			for _, cell := range cells {
				if math.Abs(cell.Error) > 1e-9 {
					t.Errorf("%s: error %v; want 0 (the simulator replaying itself)", cell.Label(), cell.Error)
				}
				if cell.KS != nil && cell.KS.D != 0 {
					t.Errorf("%s: KS D = %v; want 0", cell.Label(), cell.KS.D)
				}
				// Identical samples are never shown different; a wide
				// TTFT spread over 60 requests may leave TOST unable to tell.
				if cell.TOST != nil && cell.TOST.Verdict == validate.NotEquivalent {
					t.Errorf("%s: TOST %q; want equivalent or too few", cell.Label(), cell.TOST.Verdict)
				}
			}
		})
	}
}

// TestStatedDeployment: a records file whose meta states its deployment
// (bench --metadata gpu=h200 --metadata tp=2) replays on it, not on the
// engine flags, so the simulator's own H200 TP2 records come out at zero
// error; a stated key the engine refuses is one line naming it.
func TestStatedDeployment(t *testing.T) {
	dir := t.TempDir()
	cfg := sim.DefaultConfig()
	cfg.GPU, cfg.TP = "h200", 2
	load := simrun.Load{Level: runlog.Level{RequestRate: 8, Burstiness: 1, NumPrompts: 60}, Seed: 2}
	p := simRecordsOn(t, dir, cfg, map[string]string{"gpu": "h200", "tp": "2", "note": "not a key"}, load)
	m, err := Validate(context.Background(), Spec{Base: sim.DefaultConfig(), Inputs: []Input{{Truth: p}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Sections[0].Cells {
		if math.Abs(c.Error) > 1e-9 {
			t.Errorf("%s: error %v; want 0 on the stated H200 TP2", c.Label(), c.Error)
		}
	}
	p = simRecordsOn(t, t.TempDir(), cfg, map[string]string{"gpu": "b300"}, load)
	_, err = Validate(context.Background(), Spec{Base: sim.DefaultConfig(), Inputs: []Input{{Truth: p}}})
	if err == nil || !strings.Contains(err.Error(), `run.jsonl: metadata gpu: unknown gpu "b300"`) {
		t.Errorf("stated gpu b300: %v; want one line naming metadata gpu", err)
	}
}

// TestPoints replays a points CSV: a closed-loop point on the engine
// flags, the same point on two replicas stated in the row, and a rate
// point; each row's figures are checked against a direct simrun of the
// same point.
func TestPoints(t *testing.T) {
	dir := t.TempDir()
	csv := "name,isl,osl,concurrency,rate,num_prompts,dp,mean_ttft_ms,p99_tpot_ms,output_throughput\n" +
		"c4,512,64,4,,40,,100,10,1000\n" +
		"c4x2,512,64,4,,40,2,100,10,1000\n" +
		"r5,512,64,,5,40,,100,10,\n"
	p := filepath.Join(dir, "points.csv")
	if err := os.WriteFile(p, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Validate(context.Background(), Spec{Base: sim.DefaultConfig(), Inputs: []Input{{Truth: p}}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	byRun := map[string][]validate.Cell{}
	for _, c := range m.Sections[0].Cells {
		byRun[c.Run] = append(byRun[c.Run], c)
	}
	if len(byRun["c4"]) != 3 || len(byRun["c4x2"]) != 3 || len(byRun["r5"]) != 2 {
		t.Fatalf("cells per run: c4 %d, c4x2 %d, r5 %d; want 3, 3, 2 (r5 gives no throughput)", len(byRun["c4"]), len(byRun["c4x2"]), len(byRun["r5"]))
	}
	// The closed-loop point by hand: 40 requests of 512/64, 4 in flight.
	eng, _ := sim.New(sim.DefaultConfig())
	d := &replayed{}
	for i := range 40 {
		d.reqs = append(d.reqs, workload.Request{Index: i, PromptTokens: 512, OutputTokens: 64, OutputRecorded: true})
	}
	var recs []runlog.Record
	if _, err := simrun.Run(context.Background(), eng, d, simrun.Load{Level: runlog.Level{MaxConcurrency: 4, NumPrompts: 40}}, func(r *runlog.Record) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := SamplesOf(recs)
	if got := byRun["c4"][0]; got.Sim != want.Figure(validate.TTFT, "mean") || got.Truth != 100 {
		t.Errorf("c4 mean TTFT: sim %v, truth %v; want %v, 100", got.Sim, got.Truth, want.Figure(validate.TTFT, "mean"))
	}
	// Two replicas share the load: each has 2 in flight instead of 4, so
	// decode steps are smaller and TPOT no larger.
	if a, b := byRun["c4"][1].Sim, byRun["c4x2"][1].Sim; !(b <= a) {
		t.Errorf("P99 TPOT on two replicas %v > on one %v", b, a)
	}
}

// TestBadInputs: every mistake is one line naming the file, the line and
// the column, and an input error.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	means := write("means.tsv", "framework\tthroughput_tok_s\tmean_ttft_ms\nvLLM\t100\tfast\n")
	if err := os.Mkdir(filepath.Join(dir, "alone"), 0o755); err != nil {
		t.Fatal(err)
	}
	alone := write("alone/means.tsv", "framework\tmean_ttft_ms\nvLLM\t50\n")
	cases := []struct {
		name, file, body, want string
	}{
		{"unknown column", "a.csv", "isl,osl,concurrency,mean_ttfb_ms\n1,2,3,4\n", "a.csv:1: column mean_ttfb_ms: unknown column"},
		{"no truth column", "b.csv", "isl,osl,concurrency\n1,2,3\n", "b.csv:1: no truth column"},
		{"bad number", "c.csv", "isl,osl,concurrency,mean_ttft_ms\n512,64,4,100\n512,x,4,100\n", "c.csv:3: column osl: \"x\": want a positive whole number"},
		{"no load", "d.csv", "isl,osl,mean_ttft_ms\n512,64,100\n", "d.csv:2: column concurrency: missing"},
		{"bad engine key", "e.csv", "isl,osl,concurrency,gpu,mean_ttft_ms\n512,64,4,no-such-gpu,100\n", "e.csv:2: column gpu: "},
		{"ragged row", "f.csv", "isl,osl,concurrency,mean_ttft_ms\n512,64\n", "f.csv:2: wrong number of fields"},
		{"empty", "g.csv", "", "g.csv: empty"},
		{"records", "h.jsonl", "{\"id\":\"a\",\"intended_ns\":\"x\"}\n", "h.jsonl:1:"},
		{"servingsim", "i.jsonl", `{"request_id":0,"arrival_time":1,"input_toks":5,"output_toks":3,"queued_ts":2,"first_token_ts":1,"last_token_ts":3}` + "\n", "i.jsonl:1: want queued_ts ≤ first_token_ts"},
		{"means no workload", "", "", "requests.jsonl: the workload of " + alone + ": no such file"},
		{"means no truth row", "j.tsv", "framework\tmean_ttft_ms\nsim\t50\n", `j.tsv: no row "vLLM"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := alone
			if c.file != "" {
				p = write(c.file, c.body)
			}
			_, err := Validate(context.Background(), Spec{Base: sim.DefaultConfig(), Inputs: []Input{{Truth: p}}})
			if err == nil || !IsInputError(err) {
				t.Fatalf("Validate(%s) = %v; want an input error", c.name, err)
			}
			msg := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
			if !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("Validate(%s) = %q; want one line containing %q", c.name, msg, c.want)
			}
		})
	}
	// A bad figure in a means file names its column once the workload is found.
	write("requests.jsonl", `{"arrival_time":0.1,"input_toks":10,"output_toks":5}`+"\n")
	_, err := Validate(context.Background(), Spec{Base: sim.DefaultConfig(), Inputs: []Input{{Truth: means}}})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Line != 2 || ie.Column != "mean_ttft_ms" {
		t.Errorf("means with a bad figure: %v; want line 2, column mean_ttft_ms", err)
	}
}
