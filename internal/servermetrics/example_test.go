package servermetrics_test

import (
	"fmt"
	"strings"

	"github.com/goodput/goodput/internal/servermetrics"
)

// Two scrapes of a vLLM server five seconds apart, summarised as one
// window.
func Example() {
	scrape := func(prompt, gen, queries, hits, waiting string, atNS int64) servermetrics.Snapshot {
		body := `# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} ` + prompt + `
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} ` + gen + `
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} ` + queries + `
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} ` + hits + `
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} ` + waiting + `
`
		s, err := servermetrics.Parse(strings.NewReader(body), atNS)
		if err != nil {
			panic(err)
		}
		return s
	}
	snaps := []servermetrics.Snapshot{
		scrape("0", "0", "0", "0", "0", 0),
		scrape("20000", "5000", "20000", "15000", "8", 5e9),
	}
	w, err := servermetrics.Compute(snaps)
	if err != nil {
		panic(err)
	}
	fmt.Printf("server: %s, %.0f s\n", w.Kind, w.Seconds())
	fmt.Printf("prefill %.0f tok/s, decode %.0f tok/s\n", w.PromptTokensPerSec, w.GenerationTokensPerSec)
	fmt.Printf("prefix-cache hit rate %.2f\n", w.PrefixHitRate)
	fmt.Printf("waiting: max %.0f\n", w.Gauges[servermetrics.Waiting].Max)
	// Output:
	// server: vllm, 5 s
	// prefill 4000 tok/s, decode 1000 tok/s
	// prefix-cache hit rate 0.75
	// waiting: max 8
}
