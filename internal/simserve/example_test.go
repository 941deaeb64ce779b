package simserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
)

// Start serves the simulated engine on a free loopback port; any
// OpenAI-compatible client can then benchmark it.
func ExampleStart() {
	url, stop, err := simserve.Start(context.Background(), "127.0.0.1:0", sim.DefaultConfig(), simserve.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"one two three","max_tokens":4,"ignore_eos":true}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var out struct {
		Model   string
		Choices []struct {
			Text         string
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Model, out.Usage.PromptTokens, out.Usage.CompletionTokens, out.Choices[0].FinishReason)
	// Output: meta-llama/Llama-3.1-8B 3 4 length
}
