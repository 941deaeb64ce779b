package costmodel

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// AIC file suffixes: aiconfigurator's per-GPU performance tables (its
// systems/data/<gpu>/… parquet files) dumped to CSV, one file per kernel,
// named <gpu>_<suffix> (as in ../shared/data/aic-kernel-db-vllm0.19).
var aicFiles = []string{"gemm.csv", "context_attention.csv", "generation_attention.csv", "allreduce.csv"}

// LoadAICTables reads aiconfigurator's kernel tables in CSV from dir: the
// files <gpu>_gemm.csv (vllm_version,dtype,m,n,k,latency_ms),
// <gpu>_context_attention.csv and <gpu>_generation_attention.csv
// (vllm_version,kernel_source,batch_size,isl or kv_len,num_heads,
// num_kv_heads,head_dim,kv_cache_dtype,latency_ms) and
// <gpu>_allreduce.csv (vllm_version,backend,kernel_source,dtype,num_gpus,
// message_size in elements,latency_ms). gpu "" means the one GPU whose
// files dir holds. A missing file leaves its kernels to the formula.
func LoadAICTables(dir, gpu string) (*KernelTables, error) {
	rows, err := ReadAICRows(dir, gpu)
	if err != nil {
		return nil, err
	}
	return NewKernelTables(rows, "aiconfigurator tables "+filepath.Join(dir, gpu+"_*.csv"))
}

// ReadAICRows reads the rows of aiconfigurator's CSV tables (see
// LoadAICTables) as kernel rows. Where several vLLM versions are present
// the latest is kept; where several attention kernels are, vLLM's own
// FlashAttention (vllm_flash_attn) is preferred to FlashInfer, as vLLM
// selects it wherever it supports the GPU.
func ReadAICRows(dir, gpu string) ([]KernelRow, error) {
	if gpu == "" {
		m, _ := filepath.Glob(filepath.Join(dir, "*_gemm.csv"))
		switch len(m) {
		case 0:
			return nil, fmt.Errorf("%s: no aiconfigurator tables (<gpu>_gemm.csv …)", dir)
		case 1:
			gpu = strings.TrimSuffix(filepath.Base(m[0]), "_gemm.csv")
		default:
			var names []string
			for _, f := range m {
				names = append(names, strings.TrimSuffix(filepath.Base(f), "_gemm.csv"))
			}
			return nil, fmt.Errorf("%s: tables of several GPUs (%s): name one", dir, strings.Join(names, ", "))
		}
	}
	var rows []KernelRow
	for _, suffix := range aicFiles {
		path := filepath.Join(dir, gpu+"_"+suffix)
		recs, err := readAICFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rs, err := aicRows(suffix, recs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, rs...)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no aiconfigurator tables for %q", dir, gpu)
	}
	return rows, nil
}

// aicRecord is one CSV row by column name.
type aicRecord map[string]string

func readAICFile(path string) ([]aicRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []aicRecord
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r := aicRecord{}
		for i, h := range head {
			r[strings.TrimSpace(h)] = strings.TrimSpace(rec[i])
		}
		out = append(out, r)
	}
}

func aicRows(suffix string, recs []aicRecord) ([]KernelRow, error) {
	// The latest vLLM version and the preferred attention kernel only.
	latest := ""
	sources := map[string]bool{}
	for _, r := range recs {
		if v := r["vllm_version"]; versionLess(latest, v) {
			latest = v
		}
		sources[r["kernel_source"]] = true
	}
	source := ""
	if len(sources) > 1 && sources["vllm_flash_attn"] {
		source = "vllm_flash_attn"
	}
	var out []KernelRow
	for i, r := range recs {
		if r["vllm_version"] != latest || (source != "" && r["kernel_source"] != source) {
			continue
		}
		num := func(col string) (float64, error) {
			x, err := strconv.ParseFloat(r[col], 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return 0, fmt.Errorf("row %d: %s %q is not a number ≥ 0", i+2, col, r[col])
			}
			return x, nil
		}
		var cols []string
		switch suffix {
		case "gemm.csv":
			cols = []string{"m", "n", "k", "latency_ms"}
		case "context_attention.csv":
			cols = []string{"batch_size", "isl", "num_heads", "num_kv_heads", "head_dim", "latency_ms"}
		case "generation_attention.csv":
			cols = []string{"batch_size", "kv_len", "num_heads", "num_kv_heads", "head_dim", "latency_ms"}
		case "allreduce.csv":
			cols = []string{"num_gpus", "message_size", "latency_ms"}
		}
		v := make([]float64, len(cols))
		for j, c := range cols {
			x, err := num(c)
			if err != nil {
				return nil, err
			}
			v[j] = x
		}
		us := v[len(v)-1] * 1e3
		if !(us > 0) {
			continue // an unmeasured point
		}
		switch suffix {
		case "gemm.csv":
			out = append(out, KernelRow{Kernel: KernelGEMM, DType: normDType(r["dtype"]), M: v[0], N: v[1], K: v[2], TimeUs: us})
		case "context_attention.csv", "generation_attention.csv":
			k := KernelPrefillAttn
			if suffix == "generation_attention.csv" {
				k = KernelDecodeAttn
			}
			out = append(out, KernelRow{Kernel: k, DType: normDType(r["kv_cache_dtype"]), Batch: v[0], Len: v[1],
				Heads: int(v[2]), KVHeads: int(v[3]), HeadDim: int(v[4]), TimeUs: us})
		case "allreduce.csv":
			k := KernelAllReduce
			if strings.Contains(r["backend"], "eager") {
				k = KernelAllReduceEager
			}
			eb, err := DTypeBytes(r["dtype"])
			if err != nil {
				return nil, fmt.Errorf("row %d: %w", i+2, err)
			}
			out = append(out, KernelRow{Kernel: k, DType: normDType(r["dtype"]), GPUs: int(v[0]), Bytes: v[1] * eb, TimeUs: us})
		}
	}
	return out, nil
}

// versionLess compares dotted version strings numerically ("" is least).
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return a == "" && b != ""
}
