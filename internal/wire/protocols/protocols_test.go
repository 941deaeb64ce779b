package protocols

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHelp(t *testing.T) {
	// The CLI help and the errors print it: byte for byte what they
	// printed before the table.
	const want = "openai (completions; vllm is its alias), openai-chat, openai-responses, anthropic-messages or openai-embeddings"
	if got := Help(); got != want {
		t.Errorf("Help() = %q; want %q", got, want)
	}
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct{ name, want, key string }{
		{"openai", "openai", "OPENAI_API_KEY"},
		{" VLLM ", "openai", "OPENAI_API_KEY"},
		{"openai-chat", "openai-chat", "OPENAI_API_KEY"},
		{"anthropic-messages", "anthropic-messages", "ANTHROPIC_API_KEY"},
		{"Openai-Embeddings", "openai-embeddings", "OPENAI_API_KEY"},
		{"tgi", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := Lookup(tc.name)
			if tc.want == "" {
				if ok {
					t.Errorf("Lookup(%q) = %q; want none", tc.name, p.Name())
				}
				return
			}
			if !ok || p.Name() != tc.want || p.KeyEnv != tc.key {
				t.Errorf("Lookup(%q) = %q (key %q), %v; want %q (key %q)", tc.name, p.Name(), p.KeyEnv, ok, tc.want, tc.key)
			}
		})
	}
}

func TestNames(t *testing.T) {
	want := []string{"anthropic-messages", "openai", "openai-chat", "openai-embeddings", "openai-responses", "vllm"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names() mismatch (-want +got):\n%s", diff)
	}
}

func TestOfPath(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/v1/completions", "openai"},
		{"/v1/chat/completions", "openai-chat"},
		{"/openai/v1/chat/completions/", "openai-chat"},
		{"/v1/responses", "openai-responses"},
		{"/gateway/v1/messages", "anthropic-messages"},
		{"/v1/embeddings", "openai-embeddings"},
		{"/v1/models", ""},
		{"other", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p, ok := OfPath(tc.path)
			got := ""
			if ok {
				got = p.Name()
			}
			if got != tc.want {
				t.Errorf("OfPath(%q) = %q; want %q", tc.path, got, tc.want)
			}
		})
	}
}

func TestRoutesDistinct(t *testing.T) {
	// simserve mounts each protocol at its route, and the route labels a
	// request: two protocols at one route could not be told apart.
	seen := map[string]string{}
	for _, p := range All() {
		if q, ok := seen[p.Route()]; ok {
			t.Errorf("%s and %s share the route %s", q, p.Name(), p.Route())
		}
		seen[p.Route()] = p.Name()
	}
}
