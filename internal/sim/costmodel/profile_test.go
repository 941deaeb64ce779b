package costmodel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinProfiles(t *testing.T) {
	gpus := map[string]bool{}
	for _, g := range GPUs() {
		gpus[g.Name] = true
	}
	for _, want := range []string{"a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200", "h20", "l40s", "l4", "a10g", "rtx-4090", "rtx-pro-6000", "mi300x"} {
		if !gpus[want] {
			t.Errorf("GPUs() lacks %s", want)
		}
	}
	// Every built-in GPU states all three sustained figures with their
	// source, and none sustains more than its datasheet except GeForce
	// cards, which boost past their rated clock.
	for _, g := range GPUs() {
		s := g.Sustained
		if s.BF16TFLOPS == 0 || s.BandwidthGBs == 0 || (g.FP8TFLOPS > 0) != (s.FP8TFLOPS > 0) {
			t.Errorf("gpu %s: sustained figures %+v incomplete", g.Name, s)
		}
		if r := s.BF16TFLOPS / g.BF16TFLOPS; r > 1 && !strings.HasPrefix(g.Name, "rtx-4090") || r > 1.1 || r < 0.4 {
			t.Errorf("gpu %s: sustained bf16 %.1f is %.2f of the datasheet %.1f", g.Name, s.BF16TFLOPS, r, g.BF16TFLOPS)
		}
		if r := s.BandwidthGBs / g.BandwidthGBs; r > 1 || r < 0.6 {
			t.Errorf("gpu %s: sustained bandwidth %.0f is %.2f of the datasheet %.0f", g.Name, s.BandwidthGBs, r, g.BandwidthGBs)
		}
		if s.BandwidthSource == SourceDatasheet {
			f := DefaultHBMFraction
			if s.GDDR {
				f = DefaultGDDRFraction
			}
			if !within(s.BandwidthGBs, g.BandwidthGBs*f, 0.002) {
				t.Errorf("gpu %s: bandwidth marked datasheet is %.0f; want the datasheet × %.2f = %.0f", g.Name, s.BandwidthGBs, f, g.BandwidthGBs*f)
			}
		}
		if _, err := g.link(); err != nil {
			t.Error(err)
		}
	}
	models := map[string]bool{}
	for _, m := range Models() {
		models[m.Name] = true
	}
	for _, want := range []string{"llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "qwen2.5-7b", "qwen3-32b", "qwen3-30b-a3b", "llama-2-70b"} {
		if !models[want] {
			t.Errorf("Models() lacks %s", want)
		}
	}
}

func TestLookup(t *testing.T) {
	gpus := []struct{ in, want string }{
		{"h100-sxm", "h100-sxm"},
		{"H100-SXM", "h100-sxm"},
		{"a100-80gb", "a100-80gb"},
		{"rtx-4090", "rtx-4090"},
		{"RTX_PRO_6000", "rtx-pro-6000"},
		{"NVIDIA H100 80GB HBM3", "h100-sxm"},
	}
	for _, tt := range gpus {
		t.Run("gpu "+tt.in, func(t *testing.T) {
			g, err := LookupGPU(tt.in)
			if err != nil || g.Name != tt.want {
				t.Errorf("LookupGPU(%q) = %q, %v; want %q", tt.in, g.Name, err, tt.want)
			}
		})
	}
	models := []struct{ in, want string }{
		{"llama-3.1-8b", "llama-3.1-8b"},
		{"meta-llama/Llama-3.1-8B", "llama-3.1-8b"},
		{"Qwen3-32B", "qwen3-32b"},
		{"Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"},
	}
	for _, tt := range models {
		t.Run("model "+tt.in, func(t *testing.T) {
			m, err := LookupModel(tt.in)
			if err != nil || m.Name != tt.want {
				t.Errorf("LookupModel(%q) = %q, %v; want %q", tt.in, m.Name, err, tt.want)
			}
		})
	}
	if _, err := LookupGPU("tpu-v5"); err == nil || !strings.Contains(err.Error(), "unknown gpu") {
		t.Errorf("LookupGPU(tpu-v5) = %v; want unknown gpu", err)
	}
	if _, err := LookupModel("gpt-5"); err == nil || !strings.Contains(err.Error(), "unknown model") {
		t.Errorf("LookupModel(gpt-5) = %v; want unknown model", err)
	}
}

func TestUserProfiles(t *testing.T) {
	dir := t.TempDir()
	gpu := filepath.Join(dir, "gpu.yaml")
	// An old-style profile (datasheet figures only) still loads; its
	// sustained figures are derived and marked so.
	os.WriteFile(gpu, []byte("- name: mi300x\n  bf16_tflops: 1307\n  fp8_tflops: 2615\n  bandwidth_gbs: 5300\n  memory_gib: 192\n  interconnect: nvlink\n  interconnect_gbs: 448\n  efficiency:\n    memory: 0.7\n"), 0o644)
	g, err := LookupGPU(gpu)
	if err != nil || g.Name != "mi300x" || g.Efficiency == nil || g.Efficiency.Memory != 0.7 {
		t.Fatalf("LookupGPU(%s) = %+v, %v", gpu, g, err)
	}
	m, _ := LookupModel("llama-3.1-8b")
	d, err := NewDeployment(m, g, 1, "bf16", "auto")
	if err != nil || d.Eff.Memory != 0.7 || d.Eff.GEMMHalfM != DefaultEfficiency().GEMMHalfM {
		t.Errorf("efficiency override: %+v, %v; want memory 0.7 and other defaults", d.Eff, err)
	}
	s := d.Sustained
	if s.BF16Source != SourceDatasheet || !within(s.BF16TFLOPS, 1307*DefaultComputeFraction, 1e-12) || !within(s.FP8TFLOPS, 2615*DefaultComputeFraction, 1e-12) || !within(s.BandwidthGBs, 5300*DefaultHBMFraction, 1e-12) {
		t.Errorf("derived sustained figures %+v; want the datasheet × the default fractions", s)
	}
	if d.Link.Name != "nvlink4" {
		t.Errorf("link %q; want nvlink4, nvlink's default", d.Link.Name)
	}
	// A measured all-reduce overrides the link's figures.
	os.WriteFile(gpu, []byte("- name: box\n  bf16_tflops: 100\n  bandwidth_gbs: 1000\n  memory_gib: 24\n  interconnect: pcie\n  interconnect_gbs: 32\n  link: pcie4\n  allreduce: {latency_us: 15, bus_gbs: 20}\n  sustained: {bf16_tflops: 90, bf16_source: measured}\n"), 0o644)
	g, err = LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	d, err = NewDeployment(m, g, 1, "bf16", "auto")
	if err != nil || d.Link.LatencyUs != 15 || d.Link.BusGBs != 20 || !d.Link.Measured || d.Sustained.BF16TFLOPS != 90 {
		t.Errorf("overrides: link %+v sustained %+v, %v; want α 15 µs, β 20 GB/s, measured, 90 TFLOP/s", d.Link, d.Sustained, err)
	}
	bad := []struct{ name, yaml, want string }{
		{"unknown field", "- name: x\n  bf16_tflop: 1\n", "field bf16_tflop not found"},
		{"no bandwidth", "- name: x\n  bf16_tflops: 1\n  memory_gib: 1\n  interconnect: pcie\n  interconnect_gbs: 1\n", "bandwidth_gbs"},
		{"bad interconnect", "- name: x\n  bf16_tflops: 1\n  bandwidth_gbs: 1\n  memory_gib: 1\n  interconnect: ib\n  interconnect_gbs: 1\n", "nvlink, pcie or xgmi"},
		{"unknown link", "- name: x\n  bf16_tflops: 1\n  bandwidth_gbs: 1\n  memory_gib: 1\n  interconnect: pcie\n  interconnect_gbs: 1\n  link: pcie9\n", `unknown link "pcie9"`},
		{"sustained without source", "- name: x\n  bf16_tflops: 1\n  bandwidth_gbs: 1\n  memory_gib: 1\n  interconnect: pcie\n  interconnect_gbs: 1\n  sustained: {bandwidth_gbs: 0.9}\n", "sustained.bandwidth_source"},
		{"fp8 without datasheet", "- name: x\n  bf16_tflops: 1\n  bandwidth_gbs: 1\n  memory_gib: 1\n  interconnect: pcie\n  interconnect_gbs: 1\n  sustained: {fp8_tflops: 2, fp8_source: measured}\n", "no fp8_tflops"},
		{"old efficiency field", "- name: x\n  bf16_tflops: 1\n  bandwidth_gbs: 1\n  memory_gib: 1\n  interconnect: pcie\n  interconnect_gbs: 1\n  efficiency: {prefill_compute: 0.6}\n", "field prefill_compute not found"},
		{"empty", "", "empty"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeGPUs(strings.NewReader(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DecodeGPUs(%q) = %v; want error containing %q", tt.yaml, err, tt.want)
			}
		})
	}
	if _, err := DecodeModels(strings.NewReader("- name: x\n  layers: 2\n  hidden: 10\n  heads: 3\n  kv_heads: 2\n  intermediate: 4\n  vocab: 5\n")); err == nil {
		t.Error("DecodeModels(heads 3, kv_heads 2) = nil; want error")
	}
}

func FuzzDecodeModels(f *testing.F) {
	b, _ := builtin.ReadFile("profiles/models.yaml")
	f.Add(string(b))
	f.Add("- name: x\n  layers: 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := DecodeModels(strings.NewReader(s))
		if err != nil {
			return
		}
		for i := range ms {
			// A validated profile must yield finite, positive sizes.
			if ms[i].Params() <= 0 || ms[i].KVBytesPerToken(2) <= 0 {
				t.Fatalf("validated model %+v has params %d", ms[i], ms[i].Params())
			}
		}
	})
}
