package workload

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/tokenize"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseDist(t *testing.T) {
	tests := []struct {
		in   string
		want Dist
	}{
		{"fixed:512", Fixed(512)},
		{"300", Fixed(300)},
		{"uniform:100,900", Uniform{Min: 100, Max: 900}},
		{"normal:500,100", Normal{Mean: 500, Std: 100}},
		// p50=500 → μ = ln 500; σ = ln(4000/500)/2.3263 = ln 8/2.3263 = 0.89387.
		{"lognormal:p50=500,p99=4000", LogNormal{Mu: math.Log(500), Sigma: math.Log(8) / z99}},
		{"lognormal:p99=4000, p50=500", LogNormal{Mu: math.Log(500), Sigma: math.Log(8) / z99}},
		// mean 1000, std 1000: σ² = ln 2, μ = ln 1000 − ln2/2.
		{"lognormal:1000,1000", LogNormal{Mu: math.Log(1000) - math.Ln2/2, Sigma: math.Sqrt(math.Ln2)}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDist(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("ParseDist(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseDistErrors(t *testing.T) {
	for _, in := range []string{"", "fixed", "fixed:-1", "fixed:x", "uniform:5", "uniform:9,3", "normal:0,1",
		"normal:1", "lognormal:p50=10", "lognormal:p50=10,p99=5", "lognormal:p50=1,p95=3", "poisson:3",
		"empirical:/no/such/file", "normal:NaN,1", "lognormal:p50=Inf,p99=Inf"} {
		t.Run(in, func(t *testing.T) {
			if d, err := ParseDist(in); err == nil {
				t.Errorf("ParseDist(%q) = %v; want an error", in, d)
			}
		})
	}
}

func TestDistSampleMoments(t *testing.T) {
	// Theory: uniform 100..900 has mean 500; normal(500,100) mean 500;
	// lognormal p50=500,p99=4000 has median 500 and 99th percentile 4000.
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 50000
	draw := func(d Dist) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(d.Sample(rng))
		}
		return x
	}
	u := summarize(draw(Uniform{100, 900}))
	if math.Abs(u.Mean-500) > 5 || u.Min != 100 || u.Max != 900 {
		t.Errorf("uniform:100,900 sample mean %.1f, min %g, max %g; want 500±5, 100, 900", u.Mean, u.Min, u.Max)
	}
	nm := summarize(draw(Normal{500, 100}))
	if math.Abs(nm.Mean-500) > 3 || math.Abs(nm.Std-100) > 3 {
		t.Errorf("normal:500,100 sample mean %.1f std %.1f; want 500±3, 100±3", nm.Mean, nm.Std)
	}
	ln := summarize(draw(LogNormalFromP50P99(500, 4000)))
	if math.Abs(ln.P50-500)/500 > 0.03 || math.Abs(ln.P99-4000)/4000 > 0.08 {
		t.Errorf("lognormal p50=500,p99=4000: sample p50 %.0f, p99 %.0f; want 500±3%%, 4000±8%%", ln.P50, ln.P99)
	}
	if got := draw(Normal{1, 100}); slicesMin(got) < 1 {
		t.Errorf("normal:1,100 drew %g; want lengths clamped to >= 1", slicesMin(got))
	}
}

func slicesMin(x []float64) float64 {
	m := math.Inf(1)
	for _, v := range x {
		m = min(m, v)
	}
	return m
}

func TestEmpiricalDist(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "l.csv")
	if err := os.WriteFile(csv, []byte("a,b\r\n1,10\r\n2,20\r\n3,30"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		arg  string
		want []int
	}{
		{csv, []int{1, 2, 3}},
		{csv + ":b", []int{10, 20, 30}},
		{csv + ":2", []int{10, 20, 30}},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			d, err := ParseDist("empirical:" + tt.arg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, d.(Empirical).Values); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("n\n1\nx\n"), 0o600)
	if _, err := ParseDist("empirical:" + bad); err == nil || !strings.Contains(err.Error(), "bad.csv:3:") {
		t.Errorf("ParseDist(empirical:bad.csv) error = %v; want it to name bad.csv:3", err)
	}
	if _, err := ParseDist("empirical:" + csv + ":c"); err == nil || !strings.Contains(err.Error(), `no column "c"`) {
		t.Errorf("ParseDist(empirical:l.csv:c) error = %v; want no column \"c\"", err)
	}
}

func TestRandomWithDists(t *testing.T) {
	in, _ := ParseDist("fixed:77")
	out, _ := ParseDist("uniform:3,4")
	d, err := NewRandom(RandomConfig{NumPrompts: 20, InputDist: in, OutputDist: out, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		r := d.Request(i)
		if r.PromptTokens != 77 || r.OutputTokens < 3 || r.OutputTokens > 4 || (tokenize.Approx{}).Count(r.Prompt) != 77 {
			t.Fatalf("Request(%d) = %d in / %d out; want 77 in (counted too), 3..4 out", i, r.PromptTokens, r.OutputTokens)
		}
	}
}

func TestReadLengths(t *testing.T) {
	in := "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n74,918,992,0.08\n290,905,1195,0.32\n10,5,15,2\n"
	d, err := ReadLengths(strings.NewReader(in), "l.csv", LengthsConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 3 {
		t.Fatalf("Len() = %d; want 3", d.Len())
	}
	// A shuffle without replacement uses every row once.
	got := map[[2]int]bool{}
	for i := range 3 {
		s := d.Shape(i)
		got[[2]int{s.PromptTokens, s.OutputTokens}] = true
		if n := (tokenize.Approx{}).Count(d.Request(i).Prompt); n != s.PromptTokens {
			t.Errorf("Count(Request(%d).Prompt) = %d; want %d", i, n, s.PromptTokens)
		}
	}
	want := map[[2]int]bool{{74, 918}: true, {290, 905}: true, {10, 5}: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows used (-want +got):\n%s", diff)
	}
	// Headerless, with replacement beyond the row count.
	d, err = ReadLengths(strings.NewReader("5,6\n7,8"), "h.csv", LengthsConfig{NumPrompts: 10})
	if err != nil || d.Len() != 10 {
		t.Fatalf("ReadLengths(headerless, 10) = %v, %v; want 10 requests", d, err)
	}
}

func TestReadLengthsErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "l.csv: no data rows"},
		{"wrong columns", "a,b\n1,2\n", "l.csv:1: no prompt/output token columns in header a,b"},
		{"non-numeric", "input_tokens,output_tokens\n1,2\n3,four\n", "l.csv:3: output tokens: \"four\""},
		{"negative", "input_tokens,output_tokens\n-1,2\n", "l.csv:2: prompt tokens: \"-1\" is negative"},
		{"one column", "1\n2\n", "l.csv:1: 1 column"},
		{"ragged", "input_tokens,output_tokens\n1,2,3\n", "l.csv:2: 3 fields; want 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadLengths(strings.NewReader(tt.in), "l.csv", LengthsConfig{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadLengths(%q) error = %v; want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestSharedLengthFiles(t *testing.T) {
	// Row counts and means from shared/data/README.md.
	tests := []struct {
		file            string
		n               int
		meanIn, meanOut float64
	}{
		{"sharegpt-lengths/sharegpt_8k_filtered_stats_llama2_tokenizer.csv", 30731, 2340.0, 438.7},
		{"arxiv-summarization-lengths/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", 28257, 2588.1, 291.4},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d, err := LoadLengths(dataFile(t, tt.file), LengthsConfig{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			st := Describe(d, 0)
			if st.N != tt.n || math.Abs(st.Input.Mean-tt.meanIn) > 0.05 || math.Abs(st.Output.Mean-tt.meanOut) > 0.05 {
				t.Errorf("Describe = N %d, mean in %.2f, out %.2f; want %d, %.1f, %.1f", st.N, st.Input.Mean, st.Output.Mean, tt.n, tt.meanIn, tt.meanOut)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	// Prompts of 1,2,3,4,10 tokens: mean 4; deviations −3,−2,−1,0,6 give
	// variance 50/5 = 10, std √10; p50 = 3; p90 at rank 3.6 = 4 + 0.6·6 = 7.6;
	// p99 at rank 3.96 = 4 + 0.96·6 = 9.76.
	in := `{"prompt": "a", "output_tokens": 1}
{"prompt": "a b", "output_tokens": 1}
{"prompt": "a b c", "output_tokens": 1}
{"prompt": "a b c d", "output_tokens": 1}
{"prompt": "a b c d e f g h i j", "output_tokens": 1}`
	d, err := ReadCustom(strings.NewReader(in), "d.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := Describe(d, 0)
	want := LengthStats{N: 5,
		Input:  Summary{Mean: 4, Std: math.Sqrt(10), Min: 1, P50: 3, P90: 7.6, P99: 9.76, Max: 10},
		Output: Summary{Mean: 1, Min: 1, P50: 1, P90: 1, P99: 1, Max: 1}}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
	// Cycling: 10 requests are the 5 twice, same distribution.
	if got := Describe(d, 10); got.N != 10 || got.Input.Mean != 4 {
		t.Errorf("Describe(d, 10) = N %d mean %g; want 10, 4", got.N, got.Input.Mean)
	}
}

func TestReadShareGPT(t *testing.T) {
	long := strings.Repeat("w ", 1100)
	in := `[
{"id": "a", "conversations": [{"from": "human", "value": "one two three four five"}, {"from": "gpt", "value": "six seven eight nine"}]},
{"id": "b", "conversations": [{"from": "human", "value": "too short"}, {"from": "gpt", "value": "six seven eight nine"}]},
{"id": "c", "conversations": [{"from": "human", "value": "only one turn here"}]},
{"id": "d", "conversations": [{"from": "human", "value": "` + long + `"}, {"from": "gpt", "value": "a b c d"}]},
{"id": "e", "conversations": [{"from": "human", "value": "one two three four"}, {"from": "gpt", "value": "ok"}]}
]`
	d, err := ReadShareGPT(strings.NewReader(in), "sg.json", ShareGPTConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Only "a" passes: b's prompt has 2 tokens, c one turn, d 1100 > 1024
	// prompt tokens, e a 1-token reply.
	want := []Request{{Index: 0, Prompt: "one two three four five", PromptTokens: 5, OutputTokens: 4, OutputRecorded: true}}
	var got []Request
	for i := range d.Len() {
		got = append(got, d.Request(i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	// With --sharegpt-output-len the reply check is skipped: "e" passes too.
	d, err = ReadShareGPT(strings.NewReader(in), "sg.json", ShareGPTConfig{OutputLen: 64})
	if err != nil || d.Len() != 2 {
		t.Fatalf("ReadShareGPT(output len 64) = %v, %v; want 2 requests", d, err)
	}
	if d.Shape(0).OutputTokens != 64 || d.Shape(0).OutputRecorded {
		t.Errorf("Shape(0) = %d tokens, recorded %v; want 64, a cap (not recorded)", d.Shape(0).OutputTokens, d.Shape(0).OutputRecorded)
	}
}

func TestReadShareGPTErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "sg.json:1: invalid JSON"},
		{"not array", `{"a": 1}`, "sg.json:1: field"},
		{"syntax on line 3", "[\n{\"conversations\": []},\n{\"conversations\": [}\n]", "sg.json:3: invalid JSON"},
		{"bad type", "[\n{\"conversations\": [{\"from\": \"human\", \"value\": 5}]}]", "sg.json:2: field"},
		{"nothing usable", `[{"conversations": []}]`, "sg.json: no usable conversations (1 in file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadShareGPT(strings.NewReader(tt.in), "sg.json", ShareGPTConfig{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadShareGPT(%q) error = %v; want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestPrefixRepetition(t *testing.T) {
	d, err := NewPrefixRepetition(PrefixRepetitionConfig{PrefixLen: 40, SuffixLen: 25, NumPrefixes: 3, OutputLen: 9, NumPrompts: 30, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	byPrefix := map[string]int{}
	for i := range d.Len() {
		r := d.Request(i)
		if r.PromptTokens != 65 || r.OutputTokens != 9 || (tokenize.Approx{}).Count(r.Prompt) != 65 {
			t.Fatalf("Request(%d): %d tokens (%d counted), %d out; want 65, 65, 9", i, r.PromptTokens, (tokenize.Approx{}).Count(r.Prompt), r.OutputTokens)
		}
		byPrefix[firstTokens(r.Prompt, 40)]++
		if firstTokens(r.Prompt, 41) == firstTokens(d.Request((i+1)%30).Prompt, 41) {
			t.Errorf("requests %d and %d share 41 tokens; want suffixes unique", i, (i+1)%30)
		}
	}
	// 30 requests over 3 prefixes, evenly: 10 each.
	want := []int{10, 10, 10}
	var got []int
	for _, n := range byPrefix {
		got = append(got, n)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests per prefix (-want +got):\n%s", diff)
	}
	// Blocks 0 and 1 (tokens 0..31) lie inside the 40-token prefix: equal
	// for equal prefixes; an unbounded cache reuses 32 of 65 tokens for all
	// but the first request of each prefix: (30−3)·32 / (30·65) = 864/1950.
	if got, want := PrefixReuse(d, 0), 864.0/1950; math.Abs(got-want) > 1e-12 {
		t.Errorf("PrefixReuse = %.4f; want %.4f", got, want)
	}
}

func TestWithSharedPrefixAndCacheBust(t *testing.T) {
	base, _ := ReadCustom(strings.NewReader(`{"prompt": "hello there", "output_tokens": 2}
{"messages": [{"role": "user", "content": "hi"}]}`), "c.jsonl", nil)
	d, err := WithSharedPrefix(base, 20, 1, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := d.Request(0), d.Request(1)
	if a.PromptTokens != 22 || (tokenize.Approx{}).Count(a.Prompt) != 22 || !strings.HasSuffix(a.Prompt, " hello there") {
		t.Errorf("Request(0) = %q (%d tokens); want a 20-token prefix then \"hello there\"", a.Prompt, a.PromptTokens)
	}
	if len(b.Messages) != 2 || b.Messages[0].Role != "system" || !strings.HasPrefix(a.Prompt, b.Messages[0].Content) || b.PromptTokens != 21 {
		t.Errorf("Request(1).Messages = %+v (%d tokens); want the shared prefix as a system message, 21 tokens", b.Messages, b.PromptTokens)
	}
	bust, _ := WithCacheBust(d, 5, nil)
	x, y := bust.Request(0), bust.Request(1)
	if x.PromptTokens != 30 || (tokenize.Approx{}).Count(x.Prompt) != 30 {
		t.Errorf("busted Request(0): %d tokens (%d counted); want 30", x.PromptTokens, (tokenize.Approx{}).Count(x.Prompt))
	}
	if firstTokens(x.Prompt, 8) == firstTokens(y.Messages[0].Content, 8) || x.BlockHashes != nil {
		t.Errorf("busted requests share their first 8 tokens or keep BlockHashes; want unique prefixes, no hashes")
	}
	if s := bust.Shape(0); s.PromptTokens != 30 || s.BlockHashes != nil {
		t.Errorf("busted Shape(0) = %+v; want 30 tokens, no hashes", s)
	}
}

func FuzzReadLengths(f *testing.F) {
	f.Add("num_prefill_tokens,num_decode_tokens\n1,2\n")
	f.Add("5,6\r\n7,8")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ReadLengths(strings.NewReader(in), "l", LengthsConfig{NumPrompts: 3})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "l") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for i := range d.Len() {
			if s := d.Shape(i); s.PromptTokens < 0 || s.OutputTokens < 0 {
				t.Fatalf("Shape(%d) = %+v; want non-negative", i, s)
			}
		}
	})
}

func FuzzReadShareGPT(f *testing.F) {
	f.Add(`[{"conversations": [{"from": "human", "value": "one two three four"}, {"from": "gpt", "value": "a b c d"}]}]`)
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ReadShareGPT(strings.NewReader(in), "s", ShareGPTConfig{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "s") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for i := range d.Len() {
			if r := d.Request(i); r.PromptTokens < 4 || r.PromptTokens > 1024 {
				t.Fatalf("Request(%d) has %d prompt tokens; want 4..1024", i, r.PromptTokens)
			}
		}
	})
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"fixed:5", "uniform:1,9", "normal:5,1", "lognormal:p50=5,p99=50", "lognormal:5,5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "empirical") {
			return // touches the file system
		}
		d, err := ParseDist(s)
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 10 {
			if n := d.Sample(rng); n < 0 {
				t.Fatalf("ParseDist(%q).Sample = %d; want >= 0", s, n)
			}
		}
	})
}

func TestSharedPrefixWithCalibrationOverhead(t *testing.T) {
	// The server counts 3 tokens more than written (a BOS and a template):
	// a 300-token prompt with a 50-token shared prefix is written as 297
	// tokens, the overhead taken once for the whole prompt, not again for
	// the prefix.
	for _, name := range []string{"random", "prefix-repetition"} {
		d, err := FromOptions(Options{DatasetName: name, NumPrompts: 4, RandomInputLen: 300, RandomOutputLen: 8,
			SharedPrefixLen: 50, PrefixRepetitionPrefixLen: 100, PrefixRepetitionSuffixLen: 200,
			Calibration: tokenize.Calibration{Overhead: 3, PerToken: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for i := range d.Len() {
			r := d.Request(i)
			want := r.PromptTokens - 3
			if got := (tokenize.Approx{}).Count(r.Prompt); got != want {
				t.Errorf("%s: request %d asks %d tokens: written %d; want %d", name, i, r.PromptTokens, got, want)
			}
		}
	}
}
