package servermetrics

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseVLLM parses and maps a two-engine vLLM V1 body (~80 KB,
// every family the V1 logger registers): the cost of one scrape.
func BenchmarkParseVLLM(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "vllm.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(body), 0); err != nil {
			b.Fatal(err)
		}
	}
}
