package costmodel

import (
	"fmt"
	"sort"
	"strings"
)

// AllReduceFigures are the two numbers of the collective model
//
//	t(bytes, n) = α + 2(n−1)/n × bytes / β
//
// for one ring all-reduce of bytes over n GPUs: α (LatencyUs) is the time
// of an all-reduce of the sizes a decode step sends (tens of KB to a few
// MB), β (BusGBs) the bus bandwidth nccl-tests reports as busbw at large
// sizes (bytes × 2(n−1)/n / time). Both are the intercept and slope of a
// straight line through measured all_reduce_perf times from 256 KB to
// 32 MB, which is how a user measures their own (see docs/simulator.md).
type AllReduceFigures struct {
	// LatencyUs is α, µs.
	LatencyUs float64 `yaml:"latency_us,omitempty"`
	// BusGBs is β, GB/s (1e9 B/s).
	BusGBs float64 `yaml:"bus_gbs,omitempty"`
}

// LinkKind is a tensor-parallel link with its all-reduce figures and where
// they come from.
type LinkKind struct {
	// Name is the link's name in a GPU profile's link field.
	Name string
	AllReduceFigures
	// Measured reports whether the figures are a public measurement
	// (Source); otherwise they are derived as Source says.
	Measured bool
	// Source cites the measurement or states the derivation.
	Source string
}

// links are the built-in link kinds. NCCL over PCIe without peer-to-peer
// (GeForce and most workstation cards, and cloud VMs that disable P2P)
// stages every transfer through host memory, so it moves well under half of
// the link's raw rate; with P2P the GPUs write to each other directly.
var links = []LinkKind{
	{Name: "nvlink3", AllReduceFigures: AllReduceFigures{LatencyUs: 10, BusGBs: 230}, Measured: true,
		Source: "A100 SXM4 NVSwitch: ~230 GB/s effective all-reduce bus bandwidth (NCCL maintainer, https://github.com/NVIDIA/nccl-tests/issues/149); α as nvlink4 (same vLLM custom all-reduce), +2 µs for the older switch — derived"},
	{Name: "nvlink4", AllReduceFigures: AllReduceFigures{LatencyUs: 8, BusGBs: 300}, Measured: true,
		Source: "H100 SXM NVSwitch, vLLM's best all-reduce per size: TP4 0.5 MB 10 µs, 1 MB 14 µs, 2 MB 21 µs, 4 MB 28 µs (https://github.com/vllm-project/vllm/pull/24532) → α 7.4 µs, β 292 GB/s; NCCL 32 MiB on 8 GPUs 0.195 ms → busbw 300 GB/s (https://github.com/vllm-project/vllm/pull/42324)"},
	{Name: "nvlink5", AllReduceFigures: AllReduceFigures{LatencyUs: 8, BusGBs: 600}, Measured: false,
		Source: "B200 NVLink 5 (900 GB/s per direction, twice NVLink 4): nvlink4's β × 2, its α — derived, no public busbw sweep found"},
	{Name: "pcie5", AllReduceFigures: AllReduceFigures{LatencyUs: 27, BusGBs: 45}, Measured: true,
		Source: "8× RTX 5090, PCIe 5 with P2P: all_reduce_perf 1 MB 74.7 µs … 16 MB 646 µs, busbw 45 GB/s (https://github.com/aikitoria/open-gpu-kernel-modules README) → α 27 µs, β 45 GB/s"},
	{Name: "pcie5-nop2p", AllReduceFigures: AllReduceFigures{LatencyUs: 39, BusGBs: 26}, Measured: true,
		Source: "4× RTX 5090, PCIe 5 without P2P (NCCL 2.26, via host memory): 1 MB 93.5 µs … 32 MB 1860 µs, busbw 27 GB/s (https://github.com/NVIDIA/nccl-tests/issues/287) → α 39 µs, β 26 GB/s, 41 % of the 64 GB/s link"},
	{Name: "pcie4", AllReduceFigures: AllReduceFigures{LatencyUs: 27, BusGBs: 22}, Measured: false,
		Source: "PCIe 4 with P2P: pcie5's α, its β halved with the link rate (32 vs 64 GB/s) — derived"},
	{Name: "pcie4-nop2p", AllReduceFigures: AllReduceFigures{LatencyUs: 39, BusGBs: 13}, Measured: false,
		Source: "PCIe 4 without P2P: pcie5-nop2p's α, its β halved with the link rate — derived"},
	{Name: "xgmi3", AllReduceFigures: AllReduceFigures{LatencyUs: 10, BusGBs: 310}, Measured: false,
		Source: "MI300X Infinity Fabric, 7 × 64 GB/s per direction = 448 GB/s: NVLink 4's achieved/line ratio (300/450) × 448 ≈ 300, α as nvlink3 — derived from the datasheet"},
}

// Links returns the built-in link kinds, sorted by name.
func Links() []LinkKind {
	out := append([]LinkKind(nil), links...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// defaultLink is the link of a GPU profile that names none.
var defaultLink = map[string]string{"nvlink": "nvlink4", "pcie": "pcie4-nop2p", "xgmi": "xgmi3"}

// link resolves g's link kind and applies its allreduce overrides.
func (g *GPU) link() (LinkKind, error) {
	name := strings.ToLower(strings.TrimSpace(g.Link))
	if name == "" {
		name = defaultLink[g.Interconnect]
	}
	for _, l := range links {
		if l.Name == name {
			if g.AllReduce.LatencyUs > 0 {
				l.LatencyUs, l.Measured = g.AllReduce.LatencyUs, true
			}
			if g.AllReduce.BusGBs > 0 {
				l.BusGBs, l.Measured = g.AllReduce.BusGBs, true
			}
			return l, nil
		}
	}
	names := make([]string, 0, len(links))
	for _, l := range Links() {
		names = append(names, l.Name)
	}
	return LinkKind{}, fmt.Errorf("gpu %s: unknown link %q (want %s)", g.Name, g.Link, strings.Join(names, ", "))
}

// AllReduceSeconds is the time of one ring all-reduce of bytes over n GPUs
// on f: α + 2(n−1)/n × bytes/β, seconds; 0 for n ≤ 1.
func (f AllReduceFigures) AllReduceSeconds(bytes float64, n int) float64 {
	if n <= 1 {
		return 0
	}
	t := float64(n)
	return f.LatencyUs*1e-6 + 2*(t-1)/t*bytes/(f.BusGBs*1e9)
}

// GatherSeconds is the time to gather bytes in total onto one GPU from n
// (each holding bytes/n): α + (n−1)/n × bytes/β, seconds; 0 for n ≤ 1.
func (f AllReduceFigures) GatherSeconds(bytes float64, n int) float64 {
	if n <= 1 {
		return 0
	}
	t := float64(n)
	return f.LatencyUs*1e-6 + (t-1)/t*bytes/(f.BusGBs*1e9)
}
