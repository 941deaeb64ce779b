package sim

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden traces in testdata/*.txtar")

// TestScenarios runs the scripts in testdata/*.txtar. Each archive holds a
// "script" file of commands and a "trace" file, the golden event trace the
// script must produce (rewrite with -update after a deliberate change).
//
// Commands, one per line (# starts a comment):
//
//	config --NAME[=VALUE]...      engine settings by vLLM's argument names (first line)
//	arrive id=ID prompt=N output=N [t=NS] [reasoning=N] [hashes=H,H,...] [hashblock=N] [priority=N]
//	step [t=NS]                   one Step at t (default: the previous step's end)
//	run                           step until the engine is idle
//	abort id=ID
//	expect KEY=VALUE...           check Snapshot: running waiting preemptions
//	                              prefix_query prefix_hit prompt generation finished rejected kv
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

// kv parses key=value words.
func kv(t *testing.T, line int, words []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, w := range words {
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

// scenarioSettings set the Config field of each setting a config line may
// name; a setting given without a value is a boolean's "true".
var scenarioSettings = map[string]func(c *Config, v string) (err error){
	"model":                  func(c *Config, v string) error { c.Model = v; return nil },
	"gpu":                    func(c *Config, v string) error { c.GPU = v; return nil },
	"tensor-parallel-size":   func(c *Config, v string) (err error) { c.TP, err = strconv.Atoi(v); return err },
	"dtype":                  func(c *Config, v string) error { c.DType = v; return nil },
	"kv-cache-dtype":         func(c *Config, v string) error { c.KVCacheDType = v; return nil },
	"max-num-seqs":           func(c *Config, v string) (err error) { c.MaxNumSeqs, err = strconv.Atoi(v); return err },
	"max-num-batched-tokens": func(c *Config, v string) (err error) { c.MaxNumBatchedTokens, err = strconv.Atoi(v); return err },
	"block-size":             func(c *Config, v string) (err error) { c.BlockSize, err = strconv.Atoi(v); return err },
	"gpu-memory-utilization": func(c *Config, v string) (err error) {
		c.GPUMemoryUtilization, err = strconv.ParseFloat(v, 64)
		return err
	},
	"enable-chunked-prefill":  func(c *Config, v string) (err error) { c.EnableChunkedPrefill, err = strconv.ParseBool(v); return err },
	"enable-prefix-caching":   func(c *Config, v string) (err error) { c.EnablePrefixCaching, err = strconv.ParseBool(v); return err },
	"max-model-len":           func(c *Config, v string) (err error) { c.MaxModelLen, err = strconv.Atoi(v); return err },
	"num-gpu-blocks-override": func(c *Config, v string) (err error) { c.NumGPUBlocksOverride, err = strconv.Atoi(v); return err },
	"scheduler":               func(c *Config, v string) error { c.Scheduler = v; return nil },
	"max-waiting":             func(c *Config, v string) (err error) { c.MaxWaiting, err = strconv.Atoi(v); return err },
	"max-queue-time":          func(c *Config, v string) (err error) { c.MaxQueueTime, err = time.ParseDuration(v); return err },
	"reasoning-tokens":        func(c *Config, v string) (err error) { c.ReasoningTokens, err = strconv.ParseFloat(v, 64); return err },
	"priority":                func(c *Config, v string) (err error) { c.Priority, err = strconv.ParseBool(v); return err },
	"profile-table":           func(c *Config, v string) error { c.ProfileTable = v; return nil },
	"no-enable-prefix-caching": func(c *Config, v string) error {
		off, err := strconv.ParseBool(v)
		c.EnablePrefixCaching = !off
		return err
	},
}

// scenarioConfig is DefaultConfig changed by a config line's --NAME=VALUE
// words.
func scenarioConfig(words []string) (Config, error) {
	cfg := DefaultConfig()
	for _, w := range words {
		name, v, hasValue := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		set, ok := scenarioSettings[name]
		if !ok || !strings.HasPrefix(w, "--") {
			return cfg, fmt.Errorf("config %q: not a --SETTING[=VALUE] of the engine", w)
		}
		if !hasValue {
			v = "true"
		}
		if err := set(&cfg, v); err != nil {
			return cfg, fmt.Errorf("config %q: %v", w, err)
		}
	}
	return cfg, nil
}

// runScenario executes a script and returns its event trace.
func runScenario(t *testing.T, script string) string {
	t.Helper()
	var (
		e   *Engine
		now int64
		out bytes.Buffer
	)
	mustEngine := func(line int) {
		if e == nil {
			t.Fatalf("line %d: no config line before it", line)
		}
	}
	step := func(line int) bool {
		mustEngine(line)
		end, evs := e.Step(now)
		if len(evs) == 0 && end == now {
			return false
		}
		fmt.Fprintf(&out, "step %s -> %s:", us(now), us(end))
		for _, ev := range evs {
			out.WriteString(" " + formatEvent(ev))
		}
		out.WriteString("\n")
		now = end
		return true
	}
	for i, raw := range strings.Split(script, "\n") {
		line := i + 1
		text, _, _ := strings.Cut(raw, "#")
		words := strings.Fields(text)
		if len(words) == 0 {
			continue
		}
		cmd, args := words[0], words[1:]
		switch cmd {
		case "config":
			cfg, err := scenarioConfig(args)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			if e, err = New(cfg); err != nil {
				t.Fatalf("line %d: New = %v", line, err)
			}
			fmt.Fprintf(&out, "config blocks=%d max_model_len=%d\n", e.cfg.numBlocks, e.cfg.MaxModelLen)
		case "arrive":
			mustEngine(line)
			m := kv(t, line, args)
			r := Request{ID: m["id"], PromptTokens: atoi(t, line, m["prompt"]), OutputTokens: atoi(t, line, m["output"])}
			at := now
			if v, ok := m["t"]; ok {
				at = int64(atoi(t, line, v))
				now = max(now, at)
			}
			if v, ok := m["reasoning"]; ok {
				r.ReasoningTokens = atoi(t, line, v)
			}
			if v, ok := m["priority"]; ok {
				r.Priority = atoi(t, line, v)
			}
			if v, ok := m["hashblock"]; ok {
				r.HashBlockTokens = atoi(t, line, v)
			}
			if v, ok := m["hashes"]; ok {
				for _, h := range strings.Split(v, ",") {
					r.BlockHashes = append(r.BlockHashes, uint64(atoi(t, line, h)))
				}
			}
			if err := e.Add(at, r); err != nil {
				fmt.Fprintf(&out, "arrive %s: error: %v\n", r.ID, err)
			}
		case "step":
			m := kv(t, line, args)
			if v, ok := m["t"]; ok {
				now = int64(atoi(t, line, v))
			}
			if !step(line) {
				fmt.Fprintf(&out, "step %s: idle\n", us(now))
			}
		case "run":
			for n := 0; step(line); n++ {
				if n > 100000 {
					t.Fatalf("line %d: run did not finish", line)
				}
			}
		case "abort":
			mustEngine(line)
			e.Abort(now, kv(t, line, args)["id"])
		case "expect":
			mustEngine(line)
			s := e.Snapshot()
			vals := map[string]string{
				"running":      strconv.Itoa(s.Running),
				"waiting":      strconv.Itoa(s.Waiting),
				"preemptions":  strconv.FormatInt(s.Preemptions, 10),
				"prefix_query": strconv.FormatInt(s.PrefixQueryTokens, 10),
				"prefix_hit":   strconv.FormatInt(s.PrefixHitTokens, 10),
				"prompt":       strconv.FormatInt(s.PromptTokens, 10),
				"generation":   strconv.FormatInt(s.GenerationTokens, 10),
				"finished":     strconv.FormatInt(s.Finished, 10),
				"rejected":     strconv.FormatInt(s.Rejected, 10),
				"kv":           strconv.FormatFloat(s.KVUsage, 'f', 4, 64),
			}
			for k, want := range kv(t, line, args) {
				got, ok := vals[k]
				if !ok {
					t.Fatalf("line %d: unknown expect key %q", line, k)
				}
				if got != want {
					t.Errorf("line %d: Snapshot().%s = %s; want %s", line, k, got, want)
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

func formatEvent(ev Event) string {
	switch ev.Kind {
	case EventTokens:
		s := ev.ID + "+" + strconv.Itoa(ev.Tokens)
		if ev.Hidden {
			s += "h"
		}
		if ev.Cached > 0 {
			s += fmt.Sprintf("(cached=%d)", ev.Cached)
		}
		return s
	case EventFinished:
		tm := ev.Timing
		return fmt.Sprintf("%s:done(q=%s p=%s d=%s pre=%d)", ev.ID, us(tm.QueueNs), us(tm.PrefillNs), us(tm.DecodeNs), tm.Preemptions)
	case EventRejected:
		return fmt.Sprintf("%s:rejected(%s)", ev.ID, ev.Err)
	case EventPreempted:
		return ev.ID + ":preempted"
	}
	return ev.ID + ":" + ev.Kind.String()
}
