package simserve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/goodput/goodput/internal/tokenize"
)

// embeddingsAnswer is a /v1/embeddings answer; Embedding is a float array
// or a base64 string.
type embeddingsAnswer struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vectors decodes the answer's vectors, whichever their encoding.
func (a *embeddingsAnswer) vectors(t *testing.T) [][]float32 {
	t.Helper()
	var out [][]float32
	for i, d := range a.Data {
		if d.Object != "embedding" || d.Index != i {
			t.Errorf("data[%d]: object %q index %d; want embedding, %d", i, d.Object, d.Index, i)
		}
		var v []float32
		var s string
		switch {
		case json.Unmarshal(d.Embedding, &v) == nil:
		case json.Unmarshal(d.Embedding, &s) == nil:
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("data[%d]: base64 %q: %v", i, s, err)
			}
			for k := 0; k < len(raw); k += 4 {
				v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(raw[k:])))
			}
		default:
			t.Fatalf("data[%d]: embedding %s; want floats or base64", i, d.Embedding)
		}
		out = append(out, v)
	}
	return out
}

func postEmbeddings(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp := post(t, context.Background(), url+"/v1/embeddings", body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestEmbeddings(t *testing.T) {
	var tok tokenize.Approx
	s, url := newTestServer(t, testConfig(), Options{ServedModelName: "emb"})
	_, small := newTestServer(t, testConfig(), Options{EmbeddingDimensions: 16})
	texts := []string{"the quick brown fox", words(50), "the quick brown fox"}
	in, _ := json.Marshal(texts)
	tests := []struct {
		name   string
		url    string
		body   string
		n      int // inputs
		tokens int
		dims   int
	}{
		{"strings", url, `{"model":"emb","input":` + string(in) + `,"dimensions":8}`, 3, tok.Count(texts[0])*2 + 50, 8},
		{"one string, default dims", url, `{"input":"hello world"}`, 1, 2, DefaultEmbeddingDimensions},
		{"server dims", small, `{"input":"hello world"}`, 1, 2, 16},
		{"token ids", url, `{"input":[1,2,3,4,5],"dimensions":4}`, 1, 5, 4},
		{"arrays of ids", url, `{"input":[[1,2,3],[4,5]],"dimensions":4,"encoding_format":"float"}`, 2, 5, 4},
		{"base64", url, `{"input":` + string(in) + `,"dimensions":8,"encoding_format":"base64"}`, 3, tok.Count(texts[0])*2 + 50, 8},
	}
	results := map[string][][]float32{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := postEmbeddings(t, tt.url, tt.body)
			if code != 200 {
				t.Fatalf("status %d: %s", code, b)
			}
			var a embeddingsAnswer
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
			if a.Object != "list" || a.Usage.PromptTokens != tt.tokens || a.Usage.TotalTokens != tt.tokens {
				t.Errorf("object %q usage %+v; want list, %d prompt and total tokens", a.Object, a.Usage, tt.tokens)
			}
			vs := a.vectors(t)
			if len(vs) != tt.n {
				t.Fatalf("%d vectors; want %d", len(vs), tt.n)
			}
			for i, v := range vs {
				var norm float64
				for _, x := range v {
					norm += float64(x) * float64(x)
				}
				if len(v) != tt.dims || math.Abs(norm-1) > 1e-5 {
					t.Errorf("vector %d: %d dims, norm² %v; want %d, 1", i, len(v), norm, tt.dims)
				}
			}
			results[tt.name] = vs
		})
	}
	// The same input embeds alike, in either encoding; different inputs
	// do not.
	if vs := results["strings"]; len(vs) == 3 {
		if fmt.Sprint(vs[0]) != fmt.Sprint(vs[2]) || fmt.Sprint(vs[0]) == fmt.Sprint(vs[1]) {
			t.Error("equal inputs embed differently, or different ones alike")
		}
		if b := results["base64"]; len(b) == 3 && fmt.Sprint(b) != fmt.Sprint(vs) {
			t.Error("base64 vectors differ from the float ones")
		}
	}
	// Every input was an engine request: counted as vLLM counts requests.
	if got := testutil.ToFloat64(s.m.success["stop"]); got != 3+1+1+2+3 {
		t.Errorf(`vllm:request_success_total{finished_reason="stop"} = %v; want 10, one per input`, got)
	}
	if got := testutil.ToFloat64(s.m.promptTokens); got != float64(2*(tok.Count(texts[0])*2+50)+2+5+5) {
		t.Errorf("vllm:prompt_tokens_total = %v; want every input's tokens", got)
	}
}

func TestEmbeddingsBadRequests(t *testing.T) {
	cfg := testConfig()
	cfg.MaxModelLen = 64
	_, url := newTestServer(t, cfg, Options{})
	tests := []struct {
		name, body, param string
	}{
		{"no input", `{}`, "input"},
		{"empty string", `{"input":""}`, "input"},
		{"empty array", `{"input":[]}`, "input"},
		{"empty string in array", `{"input":["a",""]}`, "input[1]"},
		{"mixed", `{"input":["a",1]}`, "input[1]"},
		{"negative id", `{"input":[1,-2]}`, "input[1]"},
		{"empty ids", `{"input":[[1],[]]}`, "input[1]"},
		{"object", `{"input":{"a":1}}`, "input"},
		{"no tokens", `{"input":["a","  "]}`, "input[1]"},
		{"too long", `{"input":["a","` + words(64) + `"]}`, "input[1]"},
		{"format", `{"input":"a","encoding_format":"int8"}`, "encoding_format"},
		{"dimensions", `{"input":"a","dimensions":0}`, "dimensions"},
		{"dimensions too big", `{"input":"a","dimensions":100000}`, "dimensions"},
		{"too many", `{"input":[` + strings.TrimSuffix(strings.Repeat(`"a",`, maxEmbeddingInputs+1), ",") + `]}`, "input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := postEmbeddings(t, url, tt.body)
			var e errorBody
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			if code != 400 || e.Error.Param == nil || *e.Error.Param != tt.param || !strings.HasPrefix(e.Error.Message, tt.param+": ") {
				t.Errorf("status %d, body %s; want 400 naming %s", code, b, tt.param)
			}
		})
	}
}

// TestEmbeddingsPrefillTime checks in a synctest bubble that an embedding
// costs its prefill on the engine: alone, its answer leaves when the
// engine's prefill of it ends; behind other requests' prefills, later, at
// the time the engine computes for it among them.
func TestEmbeddingsPrefillTime(t *testing.T) {
	cfg := testConfig()
	input := words(1500)
	others := []struct {
		prompt    string
		maxTokens int
	}{{"a " + words(3000), 1}, {"b " + words(3000), 1}, {"c " + words(3000), 1}}
	answerAt := func(t *testing.T, before int) int64 {
		var at int64
		synctest.Test(t, func(t *testing.T) {
			s, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			h := s.Handler()
			var wg sync.WaitGroup
			for _, o := range others[:before] {
				body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"ignore_eos":true}`, o.prompt, o.maxTokens)
				wg.Go(func() {
					h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body)))
				})
				synctest.Wait() // queued in order
			}
			w := httptest.NewRecorder()
			wg.Go(func() {
				h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/embeddings", strings.NewReader(`{"input":"`+input+`"}`)))
				at = s.clock()
			})
			synctest.Wait()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = s.Run(ctx); close(done) }()
			wg.Wait()
			cancel()
			<-done
			if w.Code != 200 {
				t.Fatalf("embeddings: status %d %s", w.Code, w.Body)
			}
		})
		return at
	}
	alone, busy := answerAt(t, 0), answerAt(t, 3)
	reqs := append(others[:3:3], struct {
		prompt    string
		maxTokens int
	}{input, 1})
	want := replay(t, cfg, reqs)
	if wantAlone := replay(t, cfg, reqs[3:])["r1"][0]; alone != wantAlone {
		t.Errorf("alone: answered at %v; want the engine's prefill end %v", time.Duration(alone), time.Duration(wantAlone))
	}
	if busy != want["r4"][0] || busy <= alone {
		t.Errorf("behind 3 prefills: answered at %v; want the engine's %v, later than alone (%v)",
			time.Duration(busy), time.Duration(want["r4"][0]), time.Duration(alone))
	}
}

func FuzzParseEmbeddingsRequest(f *testing.F) {
	for _, s := range []string{
		`{"input":"a"}`, `{"input":["a","b"],"dimensions":3,"encoding_format":"base64"}`,
		`{"input":[1,2]}`, `{"input":[[1],[2,3]]}`, `{"input":[]}`, `{}`, `[]`, `{"input":[null]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := parseEmbeddingsRequest(body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 || ae.message == "" {
				t.Fatalf("error %v; want a 400 apiError with a message", err)
			}
			return
		}
		// Accepted input round-trips: as many inputs as the body has,
		// none empty.
		var w struct {
			Input      json.RawMessage `json:"input"`
			Dimensions *int            `json:"dimensions"`
		}
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		var arr []json.RawMessage
		want := 1
		var ids []int
		if json.Unmarshal(w.Input, &arr) == nil && json.Unmarshal(w.Input, &ids) != nil {
			want = len(arr)
		}
		if e.inputs() != want || e.inputs() > maxEmbeddingInputs {
			t.Fatalf("%d inputs parsed from %s; want %d", e.inputs(), w.Input, want)
		}
		for i := range e.texts {
			if e.texts[i] == "" {
				t.Fatalf("input %d accepted empty", i)
			}
		}
		for i := range e.ids {
			if len(e.ids[i]) == 0 {
				t.Fatalf("input %d accepted with no ids", i)
			}
		}
		if (w.Dimensions == nil) != (e.dims == 0) {
			t.Fatalf("dimensions %v parsed as %d", w.Dimensions, e.dims)
		}
	})
}
