package target_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/target"
)

// A target as the flags give it, built against a server: records name it
// without its credentials, by the protocol the alias stands for.
func ExampleSpec_Build() {
	s := target.Spec{Backend: "vllm", Model: "m", APIKeyEnv: target.DefaultKeyEnv,
		MaxTokensField: "max_tokens", ContinuousUsage: "auto"}
	t, err := s.Build("http://user:pw@127.0.0.1:8000", target.Conn{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.Name, t.API, t.Endpoint, t.Model, s.KeyEnv())
	// Output: http://127.0.0.1:8000 openai /v1/completions m OPENAI_API_KEY
}
