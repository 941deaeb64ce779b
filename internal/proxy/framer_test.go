package proxy

import (
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sse"
)

// ev is one event as both parsers report it: its data, the index of the
// piece of input whose arrival completed it, and whether it was truncated.
type ev struct {
	Data      string
	At        int64
	Truncated bool
}

// pieces hands out the input in the given pieces; its clock reads the
// index of the piece the last bytes came from.
type pieces struct {
	parts [][]byte
	cur   int64
}

func (p *pieces) Read(b []byte) (int, error) {
	for len(p.parts) > 0 && len(p.parts[0]) == 0 {
		p.parts = p.parts[1:]
		p.cur++
	}
	if len(p.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.parts[0])
	p.parts[0] = p.parts[0][n:]
	return n, nil
}

// viaReader parses parts with sse.Reader, the reference.
func viaReader(t testing.TB, parts [][]byte) []ev {
	src := &pieces{parts: append([][]byte(nil), parts...)}
	for len(src.parts) > 0 && len(src.parts[0]) == 0 { // the clock starts at the first non-empty piece
		src.parts = src.parts[1:]
		src.cur++
	}
	r := sse.NewReader(src, func() int64 { return src.cur }, 64)
	var out []ev
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("sse.Reader: %v", err)
		}
		out = append(out, ev{string(e.Data), e.At, e.Truncated})
	}
}

// viaFramer parses parts with the framer, checking each event's end offset.
func viaFramer(t testing.TB, parts [][]byte) []ev {
	var f framer
	f.reset()
	var out []ev
	for i, p := range parts {
		f.push(p, func(data []byte, end int) {
			if end < 1 || end > len(p) || (p[end-1] != '\n' && p[end-1] != '\r') {
				t.Fatalf("event end %d in piece %q is not after a line end", end, p)
			}
			out = append(out, ev{string(data), int64(i), false})
		})
	}
	f.finish(func(data []byte) { out = append(out, ev{string(data), int64(len(parts) - 1), true}) })
	return out
}

// split cuts b at random points.
func split(rng *rand.Rand, b []byte) [][]byte {
	var parts [][]byte
	for len(b) > 0 {
		n := 1 + rng.IntN(min(len(b), 40))
		parts = append(parts, b[:n])
		b = b[n:]
	}
	return parts
}

func TestFramerMatchesReader(t *testing.T) {
	tests := []struct {
		name, in string
		want     []ev
	}{
		{"empty", "", nil},
		{"one event", "data: a\n\n", []ev{{"a", 0, false}}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []ev{{"a", 0, false}, {"b", 0, false}}},
		{"cr only", "data: a\r\rdata:b\r\r", []ev{{"a", 0, false}, {"b", 0, false}}},
		{"multi-line data", "data: a\ndata\ndata:  b\n\n", []ev{{"a\n\n b", 0, false}}},
		{"comment and other fields", ": keep-alive\nevent: x\nid: 7\nretry: 5\ndata: a\n\n", []ev{{"a", 0, false}}},
		{"no data is no event", "event: x\n\n\n\n", nil},
		{"bom stripped", "\xEF\xBB\xBFdata: a\n\n", []ev{{"a", 0, false}}},
		{"bom only at start", "data: a\n\n\xEF\xBB\xBFdata: b\n\n", []ev{{"a", 0, false}}},
		{"truncated last event", "data: a\n\ndata: b", []ev{{"a", 0, false}, {"b", 0, true}}},
		{"unterminated event", "data: a\n", []ev{{"a", 0, true}}},
		{"done marker", "data: [DONE]\n\n", []ev{{"[DONE]", 0, false}}},
		{"partial bom is text", "\xEF\xBBdata: a\n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := [][]byte{[]byte(tt.in)}
			if got := viaFramer(t, in); !cmp.Equal(got, tt.want) {
				t.Errorf("framer(%q) = %+v; want %+v", tt.in, got, tt.want)
			}
			if got := viaReader(t, in); !cmp.Equal(got, tt.want) {
				t.Errorf("sse.Reader(%q) = %+v; want %+v (the reference disagrees with the table)", tt.in, got, tt.want)
			}
		})
	}
}

func TestFramerAnySplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	inputs := []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"\xEF\xBB\xBFdata: x\r\n\r\n: c\r\ndata: y\rdata: z\r\r",
		"data:a\n\ndata:b\ndata:c\n\ndata:d",
	}
	for _, in := range inputs {
		want := viaReader(t, [][]byte{[]byte(in)})
		for range 200 {
			parts := split(rng, []byte(in))
			got, ref := viaFramer(t, parts), viaReader(t, parts)
			if diff := cmp.Diff(ref, got); diff != "" {
				t.Fatalf("framer(%q) differs from sse.Reader (-reader +framer):\n%s", parts, diff)
			}
			if len(got) != len(want) {
				t.Fatalf("framer(%q) = %d events; want %d", parts, len(got), len(want))
			}
		}
	}
}

// FuzzFramer checks the framer against sse.Reader on any input split at
// any points: same events, same data, same arrival, same truncation.
func FuzzFramer(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\r\n\r\n"), uint64(1))
	f.Add([]byte("\xEF\xBB\xBFdata: a\rdata: b\r\r: x\n"), uint64(2))
	f.Add([]byte("data: {\"choices\":[]}\n\ndata: [DONE]"), uint64(3))
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		parts := split(rand.New(rand.NewPCG(seed, seed)), in)
		got, ref := viaFramer(t, parts), viaReader(t, parts)
		if diff := cmp.Diff(ref, got); diff != "" {
			t.Fatalf("framer(%q) differs from sse.Reader (-reader +framer):\n%s", parts, diff)
		}
	})
}
