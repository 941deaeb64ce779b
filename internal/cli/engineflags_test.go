package cli

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
)

func TestEngineFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		edit func(*sim.Config) // what the flags change from sim.DefaultConfig
	}{
		{"none", nil, func(*sim.Config) {}},
		{"every flag", []string{
			"--gpu=h200", "--tensor-parallel-size=4", "--dtype=fp8", "--kv-cache-dtype=fp8", "--max-num-seqs=7",
			"--max-num-batched-tokens=512", "--block-size=32", "--gpu-memory-utilization=0.8", "--enable-chunked-prefill=false",
			"--enable-prefix-caching=false", "--max-model-len=4096", "--num-gpu-blocks-override=100", "--scheduler=sarathi",
			"--max-waiting=3", "--max-queue-time=2s", "--reasoning-tokens=0.5", "--priority", "--profile-table=t.csv",
		}, func(c *sim.Config) {
			c.GPU, c.TP, c.DType, c.KVCacheDType, c.MaxNumSeqs = "h200", 4, "fp8", "fp8", 7
			c.MaxNumBatchedTokens, c.BlockSize, c.GPUMemoryUtilization, c.EnableChunkedPrefill = 512, 32, 0.8, false
			c.EnablePrefixCaching, c.MaxModelLen, c.NumGPUBlocksOverride, c.Scheduler = false, 4096, 100, sim.SchedSarathi
			c.MaxWaiting, c.MaxQueueTime, c.ReasoningTokens, c.Priority, c.ProfileTable = 3, 2*time.Second, 0.5, true, "t.csv"
		}},
		{"aliases", []string{"--gpu=a100-80gb", "--tp=2", "--no-enable-prefix-caching", "--max-queue-time=2s"}, func(c *sim.Config) {
			c.GPU, c.TP, c.EnablePrefixCaching, c.MaxQueueTime = "a100-80gb", 2, false, 2*time.Second
		}},
		{"no-enable-prefix-caching=false", []string{"--no-enable-prefix-caching=false"}, func(c *sim.Config) { c.EnablePrefixCaching = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sim.DefaultConfig()
			fs := pflag.NewFlagSet(tt.name, pflag.ContinueOnError)
			registerEngineFlags(fs, &got)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatalf("Parse(%q) = %v", tt.args, err)
			}
			want := sim.DefaultConfig()
			tt.edit(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config after %q (-want +got):\n%s", tt.args, diff)
			}
			if fs.Lookup("model") != nil {
				t.Errorf("registerEngineFlags registered --model: the command binds the model itself")
			}
		})
	}
}

// The flags reach the engine: an A100 keeps vLLM's smaller server defaults
// (256 seqs, 2048 tokens), as sim's TestDefaultsAndSettings checks.
func TestEngineFlagsDescribe(t *testing.T) {
	cfg := sim.DefaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	registerEngineFlags(fs, &cfg)
	if err := fs.Parse([]string{"--gpu=a100-80gb", "--tp=2", "--no-enable-prefix-caching", "--max-queue-time=2s"}); err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Describe()
	got := map[string]any{"gpu": d.GPU, "tp": d.TensorParallelSize, "pc": d.EnablePrefixCaching,
		"seqs": d.MaxNumSeqs, "tokens": d.MaxNumBatchedTokens, "qt": d.MaxQueueTimeS}
	want := map[string]any{"gpu": "a100-80gb", "tp": 2, "pc": false, "seqs": 256, "tokens": 2048, "qt": 2.0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Describe() after flags (-want +got):\n%s", diff)
	}
}

func TestSpecFlags(t *testing.T) {
	got := sim.DefaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	registerEngineFlags(fs, &got)
	args := []string{"--num-speculative-tokens=3", "--spec-acceptance=0.8", "--spec-draft=eagle", "--spec-draft-cost-frac=0.1"}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q) = %v", args, err)
	}
	want := sim.DefaultConfig()
	want.SpecTokens, want.SpecAcceptance, want.SpecDraft, want.SpecDraftCostFrac = 3, 0.8, "eagle", 0.1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config after %q (-want +got):\n%s", args, diff)
	}
}

// An engine field's error names the flag bound to the field, found in the
// command's flag set (settingError) or in the engine's (flagError); the
// alias --tp when given.
func TestEngineFieldErrors(t *testing.T) {
	cfg := sim.DefaultConfig()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.StringVar(&cfg.Model, "model", cfg.Model, "")
	registerEngineFlags(fs, &cfg)
	fields := map[string]string{"Model": "--model", "GPU": "--gpu", "TP": "--tensor-parallel-size", "DType": "--dtype",
		"KVCacheDType": "--kv-cache-dtype", "MaxNumSeqs": "--max-num-seqs", "MaxNumBatchedTokens": "--max-num-batched-tokens",
		"BlockSize": "--block-size", "GPUMemoryUtilization": "--gpu-memory-utilization", "MaxModelLen": "--max-model-len",
		"NumGPUBlocksOverride": "--num-gpu-blocks-override", "Scheduler": "--scheduler", "MaxWaiting": "--max-waiting",
		"MaxQueueTime": "--max-queue-time", "ReasoningTokens": "--reasoning-tokens", "ToolCallShare": "--tool-call-share",
		"ToolCallTokens": "--tool-call-tokens", "ProfileTable": "--profile-table", "SpecTokens": "--num-speculative-tokens",
		"SpecAcceptance": "--spec-acceptance", "SpecDraft": "--spec-draft", "SpecDraftCostFrac": "--spec-draft-cost-frac"}
	for field, flag := range fields {
		err := &sim.ConfigError{Field: field, Err: errors.New("bad")}
		if got := settingError(fs, &cfg, err); got == nil || got.Error() != flag+": bad" {
			t.Errorf("settingError(%s) = %v; want %q", field, got, flag+": bad")
		}
	}
	if err := fs.Parse([]string{"--tp", "3"}); err != nil {
		t.Fatal(err)
	}
	if got := settingError(fs, &cfg, &sim.ConfigError{Field: "TP", Err: errors.New("bad")}); got.Error() != "--tp: bad" {
		t.Errorf("settingError(TP) after --tp = %v; want --tp's", got)
	}
}
