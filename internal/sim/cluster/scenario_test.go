package cluster

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/goodput/goodput/internal/sim"
)

var update = flag.Bool("update", false, "rewrite the golden traces in testdata/*.txtar")

// TestScenarios runs the scripts in testdata/*.txtar, as the engine's own
// scenario tests do: each archive holds a "script" of commands and a
// "trace", the golden event trace the script must produce (rewrite with
// -update after a deliberate change). The routing is checked by hand in
// the scripts (want=, expect), the trace only pins the timing.
//
// Commands, one per line (# starts a comment):
//
//	cluster replicas=N router=SPEC [ep=true] [--SETTING=VALUE]...   N replicas alike (first line;
//	                                                       ep: expert parallelism, lockstep)
//	replica R --SETTING=VALUE...                           replica R's own settings (before the first arrive)
//	arrive id=ID prompt=N output=N [t=NS] [session=S] [hashes=H,H,...] [hashblock=N] [want=R]
//	advance t=NS          run the loop until t (events at t delivered)
//	run                   run the loop until every replica is idle
//	abort id=ID
//	expect [replica=R] KEY=VALUE...   check a replica's stats (routed outstanding steps
//	                                  running waiting finished rejected prefix_query prefix_hit kv)
//	                                  or, without replica, the cluster's summed snapshot
//
// Replicas are numbered from 1 in scripts and traces, as records number
// them; want=R fails the test unless the router picks replica R.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in testdata: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var script, golden []byte
			for _, f := range ar.Files {
				switch f.Name {
				case "script":
					script = f.Data
				case "trace":
					golden = f.Data
				}
			}
			got := runScenario(t, string(script))
			if *update {
				found := false
				for i := range ar.Files {
					if ar.Files[i].Name == "trace" {
						ar.Files[i].Data = []byte(got)
						found = true
					}
				}
				if !found {
					ar.Files = append(ar.Files, txtar.File{Name: "trace", Data: []byte(got)})
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(string(golden), got); diff != "" {
				t.Errorf("trace mismatch (-want +got, rerun with -update to accept):\n%s", diff)
			}
		})
	}
}

// engineSettings set the sim.Config field of each engine setting a
// script may name, by vLLM's argument name; a setting without a value is
// a boolean's "true".
var engineSettings = map[string]func(c *sim.Config, v string) error{
	"model":                   func(c *sim.Config, v string) error { c.Model = v; return nil },
	"gpu":                     func(c *sim.Config, v string) error { c.GPU = v; return nil },
	"max-num-seqs":            func(c *sim.Config, v string) (err error) { c.MaxNumSeqs, err = strconv.Atoi(v); return err },
	"max-num-batched-tokens":  func(c *sim.Config, v string) (err error) { c.MaxNumBatchedTokens, err = strconv.Atoi(v); return err },
	"num-gpu-blocks-override": func(c *sim.Config, v string) (err error) { c.NumGPUBlocksOverride, err = strconv.Atoi(v); return err },
	"max-waiting":             func(c *sim.Config, v string) (err error) { c.MaxWaiting, err = strconv.Atoi(v); return err },
	"scheduler":               func(c *sim.Config, v string) error { c.Scheduler = v; return nil },
	"no-enable-prefix-caching": func(c *sim.Config, v string) error {
		off, err := strconv.ParseBool(v)
		c.EnablePrefixCaching = !off
		return err
	},
}

// applySettings changes c by --NAME[=VALUE] words.
func applySettings(c *sim.Config, words []string) error {
	for _, w := range words {
		name, v, hasValue := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		set, ok := engineSettings[name]
		if !ok || !strings.HasPrefix(w, "--") {
			return fmt.Errorf("%q: not a --SETTING[=VALUE] of the engine", w)
		}
		if !hasValue {
			v = "true"
		}
		if err := set(c, v); err != nil {
			return fmt.Errorf("%q: %v", w, err)
		}
	}
	return nil
}

func words(t *testing.T, line int, ws []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, w := range ws {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			t.Fatalf("line %d: %q is not key=value", line, w)
		}
		m[k] = v
	}
	return m
}

func atoi(t *testing.T, line int, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("line %d: %q is not an integer", line, s)
	}
	return n
}

// runScenario executes a script and returns its trace.
func runScenario(t *testing.T, script string) string {
	t.Helper()
	var (
		cfg Config
		c   *Cluster
		now int64
		out bytes.Buffer
	)
	// build makes the cluster once its configuration is complete.
	build := func(line int) {
		if c != nil {
			return
		}
		if len(cfg.Replicas) == 0 {
			t.Fatalf("line %d: no cluster line before it", line)
		}
		var err error
		if c, err = New(cfg); err != nil {
			t.Fatalf("line %d: New = %v", line, err)
		}
		fmt.Fprintf(&out, "cluster replicas=%d router=%s\n", c.Len(), cfg.Router)
	}
	show := func(at int64, bs []Batch) {
		fmt.Fprintf(&out, "%s", us(at))
		for _, b := range bs {
			fmt.Fprintf(&out, " r%d:", b.Replica+1)
			for _, ev := range b.Events {
				out.WriteString(" " + formatEvent(ev))
			}
		}
		out.WriteString("\n")
	}
	// advance runs the loop until to, delivering the events at to.
	advance := func(to int64) {
		for now < to {
			end, evs := c.Step(now, to)
			if end == now && len(evs) == 0 {
				now = to
				return
			}
			if len(evs) > 0 {
				show(end, evs)
			}
			now = end
		}
	}
	for i, raw := range strings.Split(script, "\n") {
		line := i + 1
		text, _, _ := strings.Cut(raw, "#")
		ws := strings.Fields(text)
		if len(ws) == 0 {
			continue
		}
		cmd, args := ws[0], ws[1:]
		switch cmd {
		case "cluster":
			var settings []string
			m := map[string]string{}
			for _, w := range args {
				if strings.HasPrefix(w, "--") {
					settings = append(settings, w)
					continue
				}
				k, v, _ := strings.Cut(w, "=")
				m[k] = v
			}
			n := atoi(t, line, m["replicas"])
			r, err := ParseRouter(m["router"])
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			base := sim.DefaultConfig()
			if err := applySettings(&base, settings); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			cfg = Config{Router: r, ExpertParallel: m["ep"] == "true"}
			for range n {
				cfg.Replicas = append(cfg.Replicas, base)
			}
		case "replica":
			if c != nil || len(args) == 0 {
				t.Fatalf("line %d: replica R --SETTING... goes after cluster, before the first arrive", line)
			}
			r := atoi(t, line, args[0])
			if r < 1 || r > len(cfg.Replicas) {
				t.Fatalf("line %d: replica %d of %d", line, r, len(cfg.Replicas))
			}
			if err := applySettings(&cfg.Replicas[r-1], args[1:]); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
		case "arrive":
			build(line)
			m := words(t, line, args)
			r := Request{Request: sim.Request{ID: m["id"], PromptTokens: atoi(t, line, m["prompt"]), OutputTokens: atoi(t, line, m["output"])},
				Session: m["session"]}
			if v, ok := m["t"]; ok {
				advance(int64(atoi(t, line, v)))
			}
			if v, ok := m["hashblock"]; ok {
				r.HashBlockTokens = atoi(t, line, v)
			}
			if v, ok := m["hashes"]; ok {
				for _, h := range strings.Split(v, ",") {
					r.BlockHashes = append(r.BlockHashes, uint64(atoi(t, line, h)))
				}
			}
			got, err := c.Add(now, r)
			if err != nil {
				fmt.Fprintf(&out, "%s arrive %s: error: %v\n", us(now), r.ID, err)
				continue
			}
			fmt.Fprintf(&out, "%s arrive %s -> r%d\n", us(now), r.ID, got+1)
			if v, ok := m["want"]; ok && got+1 != atoi(t, line, v) {
				t.Errorf("line %d: %s routed to replica %d; want %s", line, r.ID, got+1, v)
			}
		case "advance":
			build(line)
			advance(int64(atoi(t, line, words(t, line, args)["t"])))
		case "run":
			build(line)
			for n := 0; ; n++ {
				if n > 1_000_000 {
					t.Fatalf("line %d: run did not finish", line)
				}
				end, evs := c.Step(now, math.MaxInt64)
				if end == now && len(evs) == 0 {
					if c.Busy() {
						t.Fatalf("line %d: the cluster is busy but runs nothing", line)
					}
					break
				}
				if len(evs) > 0 {
					show(end, evs)
				}
				now = end
			}
		case "abort":
			build(line)
			c.Abort(now, words(t, line, args)["id"])
		case "expect":
			build(line)
			m := words(t, line, args)
			var s sim.Snapshot
			vals := map[string]string{}
			what := "cluster"
			if v, ok := m["replica"]; ok {
				r := atoi(t, line, v)
				if r < 1 || r > c.Len() {
					t.Fatalf("line %d: replica %d of %d", line, r, c.Len())
				}
				st := c.Stats()[r-1]
				s = st.Engine
				vals["routed"] = strconv.FormatInt(st.Routed, 10)
				vals["outstanding"] = strconv.Itoa(st.Outstanding)
				vals["steps"] = strconv.FormatInt(st.Steps, 10)
				what = "replica " + v
				delete(m, "replica")
			} else {
				s = c.Snapshot()
			}
			vals["running"] = strconv.Itoa(s.Running)
			vals["waiting"] = strconv.Itoa(s.Waiting)
			vals["finished"] = strconv.FormatInt(s.Finished, 10)
			vals["rejected"] = strconv.FormatInt(s.Rejected, 10)
			vals["prefix_query"] = strconv.FormatInt(s.PrefixQueryTokens, 10)
			vals["prefix_hit"] = strconv.FormatInt(s.PrefixHitTokens, 10)
			vals["kv"] = strconv.FormatFloat(s.KVUsage, 'f', 4, 64)
			for k, want := range m {
				got, ok := vals[k]
				if !ok {
					t.Fatalf("line %d: unknown expect key %q", line, k)
				}
				if got != want {
					t.Errorf("line %d: %s %s = %s; want %s", line, what, k, got, want)
				}
			}
		default:
			t.Fatalf("line %d: unknown command %q", line, cmd)
		}
	}
	return out.String()
}

// us formats ns as µs with three decimals (exact).
func us(ns int64) string { return fmt.Sprintf("%d.%03dus", ns/1000, ns%1000) }

func formatEvent(ev sim.Event) string {
	switch ev.Kind {
	case sim.EventTokens:
		s := ev.ID + "+" + strconv.Itoa(ev.Tokens)
		if ev.Cached > 0 {
			s += fmt.Sprintf("(cached=%d)", ev.Cached)
		}
		return s
	case sim.EventFinished:
		tm := ev.Timing
		return fmt.Sprintf("%s:done(q=%s p=%s)", ev.ID, us(tm.QueueNs), us(tm.PrefillNs))
	case sim.EventRejected:
		return fmt.Sprintf("%s:rejected(%s)", ev.ID, ev.Err)
	}
	return ev.ID + ":" + ev.Kind.String()
}
