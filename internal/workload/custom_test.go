package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadCustom(t *testing.T) {
	in := "\xef\xbb\xbf{\"prompt\": \"Hello, world!\", \"output_tokens\": 12, \"id\": 7}\r\n" +
		"\n" +
		`{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}` // no final newline
	d, err := ReadCustom(strings.NewReader(in), "p.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Name(), "custom:p.jsonl"; got != want {
		t.Errorf("Name() = %q; want %q", got, want)
	}
	// "Hello, world!" = Hello , world ! = 4 Approx tokens; "Be brief." = 3, "Hi" = 1.
	want := []Request{
		{Index: 0, Prompt: "Hello, world!", PromptTokens: 4, OutputTokens: 12},
		{Index: 1, Messages: []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}, PromptTokens: 4},
	}
	var got []Request
	for i := range d.Len() {
		got = append(got, d.Request(i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if s := d.Shape(1); s.Messages != nil || s.PromptTokens != 4 {
		t.Errorf("Shape(1) = %+v; want no text, PromptTokens 4", s)
	}
}

func TestReadCustomErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "f.jsonl: no requests"},
		{"blank lines only", "\n\r\n  \n", "f.jsonl: no requests"},
		{"bad json on line 2", "{\"prompt\":\"a\"}\n{\"prompt\":", "f.jsonl:2: invalid JSON"},
		{"no prompt", `{"output_tokens": 3}`, "f.jsonl:1: no \"prompt\" or \"messages\""},
		{"both", `{"prompt": "a", "messages": [{"role":"user","content":"b"}]}`, "f.jsonl:1: both"},
		{"non-numeric output", `{"prompt": "a", "output_tokens": "ten"}`, "f.jsonl:1: \"output_tokens\" \"ten\" is not"},
		{"fractional output", `{"prompt": "a", "output_tokens": 1.5}`, "f.jsonl:1: \"output_tokens\" 1.5"},
		{"negative output", "\n\n" + `{"prompt": "a", "output_tokens": -1}`, "f.jsonl:3: \"output_tokens\" -1"},
		{"message without role", `{"messages": [{"content": "x"}]}`, "f.jsonl:1: message 1 has no \"role\""},
		{"prompt not string", `{"prompt": 5}`, "f.jsonl:1: field \"prompt\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCustom(strings.NewReader(tt.in), "f.jsonl", nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadCustom(%q) error = %v; want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestLoadCustomFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prompts.jsonl")
	if err := os.WriteFile(path, []byte(`{"prompt": "one two three", "output_tokens": 5}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := LoadCustom(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Request(0); r.PromptTokens != 3 || r.OutputTokens != 5 {
		t.Errorf("Request(0) = %+v; want PromptTokens 3, OutputTokens 5", r)
	}
	if _, err := LoadCustom(filepath.Join(t.TempDir(), "missing.jsonl"), nil); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("LoadCustom(missing) error = %v; want it to name the file", err)
	}
}

func FuzzReadCustom(f *testing.F) {
	f.Add(`{"prompt": "Hello", "output_tokens": 12}` + "\n")
	f.Add(`{"messages": [{"role": "user", "content": "Hi"}], "output_tokens": 3}`)
	f.Add("\xef\xbb\xbf\r\n{}\n")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ReadCustom(strings.NewReader(in), "f.jsonl", nil)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.jsonl") {
				t.Fatalf("ReadCustom error %q does not start with the file name", err)
			}
			return
		}
		if d.Len() == 0 {
			t.Fatalf("ReadCustom succeeded with no requests")
		}
		for i := range d.Len() {
			r := d.Request(i)
			if r.OutputTokens < 0 || r.PromptTokens < 0 {
				t.Fatalf("Request(%d) = %+v; want non-negative lengths", i, r)
			}
		}
	})
}
