package openai

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/goodput/goodput/internal/sse"
	"github.com/goodput/goodput/internal/wire"
)

// TestReadDecodeNoAllocs holds the client's per-event goal of
// docs/performance.md (read one SSE event and decode its chunk: 0
// allocations, as BenchmarkReadDecode measures) as a test, on the same
// recorded streams: a whole stream read and decoded with the Reader and
// decoder reused, as a pooled client does, allocates nothing.
func TestReadDecodeNoAllocs(t *testing.T) {
	for _, name := range streamFiles {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "streams", name+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			src := bytes.NewReader(data)
			r := sse.NewReader(src, func() int64 { return 0 }, 0)
			var (
				d      ChunkDecoder
				c      wire.Chunk
				events int
			)
			stream := func() {
				src.Reset(data)
				r.Reset(src)
				events = 0
				for {
					ev, err := r.Next()
					if err == io.EOF {
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					events++
					if string(ev.Data) == "[DONE]" {
						continue
					}
					if err := d.Decode(ev.Data, &c); err != nil {
						t.Fatal(err)
					}
				}
			}
			stream() // grow the buffers once, as the first stream on a pooled connection does
			if allocs := testing.AllocsPerRun(50, stream); allocs != 0 {
				t.Errorf("%v allocations per stream of %d events; want 0 (the goal is 0 per event)", allocs, events)
			}
			if events < 5 {
				t.Fatalf("read %d events; the recorded stream has more", events)
			}
		})
	}
}
