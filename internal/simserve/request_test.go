package simserve

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/goodput/goodput/internal/sim"
	"github.com/google/go-cmp/cmp"
)

func TestParseGenRequest(t *testing.T) {
	tests := []struct {
		name string
		chat bool
		body string
		want genRequest
	}{
		{name: "minimal completion", body: `{"prompt":"hi"}`,
			want: genRequest{text: []string{"hi"}}},
		{name: "all options", body: `{"model":"m","prompt":["hi"],"max_tokens":10,"min_tokens":3,"ignore_eos":true,"stream":true,
			"stream_options":{"include_usage":true,"continuous_usage_stats":true},"n":1,"priority":2,"temperature":0.7,"stop":["x"]}`,
			want: genRequest{model: "m", text: []string{"hi"}, maxTokens: 10, minTokens: 3, ignoreEOS: true, stream: true,
				includeUsage: true, continuousUsage: true, priority: 2}},
		{name: "token ids", body: `{"prompt":[1,2,3]}`, want: genRequest{tokenIDs: []int{1, 2, 3}}},
		{name: "nested token ids", body: `{"prompt":[[4,5]]}`, want: genRequest{tokenIDs: []int{4, 5}}},
		{name: "smaller of the two limits", body: `{"prompt":"x","max_tokens":50,"max_completion_tokens":20}`,
			want: genRequest{text: []string{"x"}, maxTokens: 20}},
		{name: "chat parts and null content", chat: true,
			body: `{"messages":[{"role":"system","content":"a"},{"role":"user","content":[{"type":"text","text":"b"},{"type":"image_url","image_url":{}},{"type":"text","text":"c"}]},{"role":"assistant","content":null}]}`,
			want: genRequest{chat: true, text: []string{"a", "b\nc", ""}, lastRole: "assistant"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGenRequest([]byte(tc.body), tc.chat)
			if err != nil {
				t.Fatalf("parseGenRequest(%s) error %v", tc.body, err)
			}
			if diff := cmp.Diff(tc.want, *got, cmp.AllowUnexported(genRequest{})); diff != "" {
				t.Errorf("parseGenRequest(%s) (-want +got):\n%s", tc.body, diff)
			}
		})
	}
}

func FuzzParseGenRequest(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi","max_tokens":3}`,
		`{"prompt":[1,2],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_completion_tokens":1}`,
		`{"prompt":[[1]],"min_tokens":2,"max_tokens":1}`,
		`{"prompt":null}`, `[]`, ``, `{"n":2}`,
		`{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}],"tool_choice":"required"}`,
		`{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"messages":[{"role":"tool","content":"r"}],"tools":[{"type":"function","function":{}}],"tool_choice":5}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		g, err := parseGenRequest(body, chat)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 || ae.message == "" {
				t.Fatalf("parseGenRequest error %v; want a 400 apiError with a message", err)
			}
			return
		}
		switch {
		case g.maxTokens < 0:
			t.Fatalf("maxTokens = %d; want ≥ 0", g.maxTokens)
		case g.minTokens < 0 || g.maxTokens > 0 && g.minTokens > g.maxTokens:
			t.Fatalf("minTokens = %d with maxTokens %d", g.minTokens, g.maxTokens)
		case chat && len(g.text) == 0:
			t.Fatal("chat request without messages accepted")
		case !chat && len(g.text) == 0 && len(g.tokenIDs) == 0:
			t.Fatal("completion without a prompt accepted")
		case !g.stream && (g.includeUsage || g.continuousUsage):
			t.Fatal("stream options accepted without stream")
		case g.toolChoice == choiceNamed && g.toolIndex(g.toolChoiceName) < 0:
			t.Fatalf("tool_choice names %q, which is not declared", g.toolChoiceName)
		case g.toolChoice == choiceRequired && len(g.tools) == 0:
			t.Fatal(`tool_choice "required" accepted without tools`)
		}
		for i, td := range g.tools {
			if td.name == "" || td.argKey == "" || g.toolIndex(td.name) != i {
				t.Fatalf("tool %d = %+v; want a unique name and an argument key", i, td)
			}
		}
		// Whatever parses can be planned without panicking.
		info := analyzePrompt(g.text, g.tokenIDs, 2, 16, chat)
		if info.tokens < 0 || len(info.hashes) != info.tokens/16 {
			t.Fatalf("analyzePrompt: %d tokens, %d hashes", info.tokens, len(info.hashes))
		}
	})
}

func FuzzParseTokenizeRequest(f *testing.F) {
	for _, s := range []string{`{"prompt":"a b"}`, `{"messages":[{"role":"user","content":"x"}]}`, `{"prompt":[1]}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, text, ids, _, err := parseTokenizeRequest(body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 {
				t.Fatalf("error %v; want a 400 apiError", err)
			}
			return
		}
		if text == nil && ids == nil {
			t.Fatal("accepted a request with nothing to tokenize")
		}
	})
}

func TestAnalyzePrompt(t *testing.T) {
	// Approx counts one token per word of ≤ 5 letters, so these prompts
	// are 40 and 36 tokens: two full 16-token blocks each, sharing the
	// first one (the first 16 words are equal) and not the second.
	shared := "a b c d e f g h i j k l m n o p "
	a := analyzePrompt([]string{shared + "q r s t u v w x y z a b c d e f g h i j k l m n"}, nil, 0, 16, false)
	b := analyzePrompt([]string{shared + "z z z z z z z z z z z z z z z z z z z z"}, nil, 0, 16, false)
	if a.tokens != 40 || b.tokens != 36 {
		t.Fatalf("tokens = %d, %d; want 40, 36", a.tokens, b.tokens)
	}
	if len(a.hashes) != 2 || len(b.hashes) != 2 {
		t.Fatalf("hashes = %d, %d; want 2, 2 (full blocks only)", len(a.hashes), len(b.hashes))
	}
	if a.hashes[0] != b.hashes[0] {
		t.Error("first blocks are equal text but hash differently")
	}
	if a.hashes[1] == b.hashes[1] {
		t.Error("second blocks differ but hash alike")
	}
	if a.hash == b.hash {
		t.Error("different prompts have the same content hash")
	}
	// A chat template's tokens count and hash alike for every message.
	c := analyzePrompt([]string{"x y", "z"}, nil, 3, 16, true)
	if c.tokens != 3+2+3+1 {
		t.Errorf("chat tokens = %d; want 9 (3 template + 2, 3 template + 1)", c.tokens)
	}
}

func TestNaturalLength(t *testing.T) {
	// Log-normal with median 200 and σ = 0.8: P10 = 200·e^(−0.8·1.2816) =
	// 71.8, P90 = 200·e^(0.8·1.2816) = 557.3. Over 20,000 hashes the sample
	// quantiles land within a few percent of these.
	const n = 20000
	ls := make([]float64, n)
	for i := range n {
		ls[i] = float64(sim.NaturalLength(sim.Mix64(uint64(i)), 200))
	}
	slices.Sort(ls)
	for _, q := range []struct {
		p, want float64
	}{{0.1, 71.8}, {0.5, 200}, {0.9, 557.3}} {
		got := ls[int(q.p*n)]
		if math.Abs(got-q.want)/q.want > 0.05 {
			t.Errorf("P%.0f of naturalLength = %v; want %v ± 5%%", q.p*100, got, q.want)
		}
	}
	if a, b := sim.NaturalLength(42, 200), sim.NaturalLength(42, 200); a != b {
		t.Errorf("naturalLength(42, 200) = %d, then %d; want the same", a, b)
	}
	// The prompt used by TestStreaming's min_tokens case has a natural
	// length (median 4) below its min_tokens of 60 and above 1.
	info := analyzePrompt([]string{"one two three four"}, nil, 0, 16, false)
	if got := sim.NaturalLength(info.hash, 4); got >= 60 || got < 2 {
		t.Errorf("naturalLength(prompt) = %d; the streaming test needs 2..59", got)
	}
}
