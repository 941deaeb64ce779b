package watch_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/watch"
)

// A config lists the vendors to probe; top-level settings are every
// target's defaults.
func Example() {
	cfg, err := watch.ParseConfig([]byte(`
interval: 30s
slo: "ttft:2000 tpot:50"
targets:
  - name: vendor-a
    base_url: https://api.vendor-a.example
    model: model-a
    api_key_env: VENDOR_A_KEY
  - name: vendor-b
    base_url: https://api.vendor-b.example
    backend: openai
    interval: 1m
    probe: {prompt_tokens: 512, max_tokens: 16}
`), "watch.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range cfg.Targets {
		fmt.Printf("%s: %s every %v, SLO %s at %.0f%%, probe %d→%d tokens\n",
			t.Name, t.Backend, t.Interval, t.SLO, 100*t.Objective, t.Probe.PromptTokens, t.Probe.MaxTokens)
	}
	_, err = watch.ParseConfig([]byte("targets:\n  - name: a\n    base_url: https://a.example\n    intervall: 1m\n"), "bad.yaml")
	fmt.Println(err)
	// Output:
	// vendor-a: openai-chat every 30s, SLO ttft:2000 tpot:50 at 99%, probe 128→64 tokens
	// vendor-b: openai every 1m0s, SLO ttft:2000 tpot:50 at 99%, probe 512→16 tokens
	// bad.yaml:4: targets[0]: unknown field "intervall" (did you mean interval?)
}
