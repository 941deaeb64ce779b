package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// pieceReader returns data in pieces that end at the given cut offsets, one
// piece (or what fits of it) per Read, and remembers which Read call
// delivered each byte, so tests can work out every event's At.
type pieceReader struct {
	data   []byte
	cuts   []int // ascending offsets in (0, len(data))
	pos    int
	calls  int   // Read calls so far, including the final (0, io.EOF)
	readOf []int // readOf[i] is the Read call (1-based) that delivered byte i
	err    error // returned instead of io.EOF at the end, when set
}

func newPieceReader(data string, cuts []int) *pieceReader {
	return &pieceReader{data: []byte(data), cuts: cuts, readOf: make([]int, len(data))}
}

func (p *pieceReader) Read(b []byte) (int, error) {
	p.calls++
	if p.pos == len(p.data) {
		if p.err != nil {
			return 0, p.err
		}
		return 0, io.EOF
	}
	end := len(p.data)
	for _, c := range p.cuts {
		if c > p.pos {
			end = c
			break
		}
	}
	n := copy(b, p.data[p.pos:end])
	for i := p.pos; i < p.pos+n; i++ {
		p.readOf[i] = p.calls
	}
	p.pos += n
	return n, nil
}

// now is the clock the tests give the Reader: the number of Read calls made
// so far. Because the Reader must read the clock exactly once, right after
// each Read, the reading equals the number of the Read that returned last.
func (p *pieceReader) now() int64 { return int64(p.calls) }

// readAll drains r, converting events to the model's form (Done holds At).
func readAll(r *Reader) ([]modelEvent, error) {
	var out []modelEvent
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, toModel(ev))
	}
}

func toModel(ev Event) modelEvent {
	return modelEvent{
		Type: string(ev.Type), HasType: ev.Type != nil,
		ID: string(ev.ID), HasID: ev.ID != nil,
		Data: string(ev.Data), Truncated: ev.Truncated, Done: int(ev.At),
	}
}

// expectAt replaces each model event's byte offset with the Read call that
// delivered that byte, which is the At the Reader must report.
func expectAt(want []modelEvent, p *pieceReader) []modelEvent {
	out := make([]modelEvent, len(want))
	for i, e := range want {
		e.Done = p.readOf[e.Done]
		out[i] = e
	}
	return out
}

var ignoreDone = cmpopts.IgnoreFields(modelEvent{}, "Done")

func TestReaderEvents(t *testing.T) {
	ev := func(data string) modelEvent { return modelEvent{Data: data} }
	tests := []struct {
		name string
		in   string
		want []modelEvent
	}{
		{"empty stream", "", nil},
		{"one event", "data: hi\n\n", []modelEvent{ev("hi")}},
		{"several events", "data: a\n\ndata: b\n\ndata: c\n\n", []modelEvent{ev("a"), ev("b"), ev("c")}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []modelEvent{ev("a"), ev("b")}},
		{"CR", "data: a\r\rdata: b\r\r", []modelEvent{ev("a"), ev("b")}},
		{"mixed endings", "data: a\r\n\ndata: b\r\rdata: c\n\r\n", []modelEvent{ev("a"), ev("b"), ev("c")}},
		{"LF LF after CR is one blank line", "data: a\r\n\n\ndata: b\n\n", []modelEvent{ev("a"), ev("b")}},
		{"comments and keep-alives", ": ping\n\n:\n\ndata: a\n: inside\n\n: bye\n\n", []modelEvent{ev("a")}},
		{"event and id", "event: delta\nid: 7\ndata: x\n\n", []modelEvent{{Type: "delta", HasType: true, ID: "7", HasID: true, Data: "x"}}},
		{"last event field wins", "event: a\nevent: b\ndata: x\n\n", []modelEvent{{Type: "b", HasType: true, Data: "x"}}},
		{"type and id do not carry over", "event: e\nid: 1\ndata: x\n\ndata: y\n\n", []modelEvent{{Type: "e", HasType: true, ID: "1", HasID: true, Data: "x"}, ev("y")}},
		{"retry is not an event", "retry: 3000\n\ndata: x\n\n", []modelEvent{ev("x")}},
		{"field without colon", "data\n\nevent\ndata\n\n", []modelEvent{ev(""), {HasType: true, Data: ""}}},
		{"multi-line data", "data: a\ndata: b\ndata:\ndata: c\n\n", []modelEvent{ev("a\nb\n\nc")}},
		{"data without space", "data:x\n\n", []modelEvent{ev("x")}},
		{"only one space stripped", "data:  x \n\n", []modelEvent{ev(" x ")}},
		{"colon in value", "data: {\"a\":1}\n\n", []modelEvent{ev(`{"a":1}`)}},
		{"DONE is plain data", "data: {}\n\ndata: [DONE]\n\n", []modelEvent{ev("{}"), ev("[DONE]")}},
		{"ends without DONE", "data: {}\n\n", []modelEvent{ev("{}")}},
		{"event without data is dropped", "event: ping\n\nid: 3\n\ndata: x\n\n", []modelEvent{ev("x")}},
		{"unknown field ignored", "foo: bar\ndata: x\nDATA: y\n\n", []modelEvent{ev("x")}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []modelEvent{ev("x")}},
		{"blank lines before first event", "\n\n\r\n\rdata: x\n\n", []modelEvent{ev("x")}},
		{"BOM stripped", "\uFEFFdata: x\n\n", []modelEvent{ev("x")}},
		{"second BOM is not stripped", "\uFEFF\uFEFFdata: x\n\ndata: y\n\n", []modelEvent{ev("y")}},
		{"BOM-looking bytes later kept", "data: \uFEFF\n\n", []modelEvent{ev("\uFEFF")}},
		{"final event without blank line", "data: a\n\ndata: [DONE]\n", []modelEvent{ev("a"), {Data: "[DONE]", Truncated: true}}},
		{"final line without terminator", "data: a\n\ndata: [DONE]", []modelEvent{ev("a"), {Data: "[DONE]", Truncated: true}}},
		{"cut mid-line", "data: {\"cho", []modelEvent{{Data: `{"cho`, Truncated: true}}},
		{"open event without data at EOF", "data: a\n\nevent: x\n", []modelEvent{ev("a")}},
		{"CR at very end", "data: a\r", []modelEvent{{Data: "a", Truncated: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The table's expectations were written by hand; check the model
			// agrees with them first, so the split tests below rest on it.
			model, _, _ := modelParse(tt.in)
			if diff := cmp.Diff(tt.want, model, ignoreDone, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("modelParse(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			// Whole input in one read, one byte per read, and every two-way
			// split: same events, and At from the read completing each.
			splits := [][]int{nil, everyByte(len(tt.in))}
			for i := 1; i < len(tt.in); i++ {
				splits = append(splits, []int{i})
			}
			for _, cuts := range splits {
				p := newPieceReader(tt.in, cuts)
				got, err := readAll(NewReader(p, p.now, 0))
				if err != nil {
					t.Fatalf("Next(%q, cuts %v) error %v", tt.in, cuts, err)
				}
				want := expectAt(model, p)
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("events of %q with cuts %v mismatch (-want +got):\n%s", tt.in, cuts, diff)
				}
			}
		})
	}
}

func everyByte(n int) []int {
	cuts := make([]int, 0, n)
	for i := 1; i < n; i++ {
		cuts = append(cuts, i)
	}
	return cuts
}

func TestReaderRetry(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   int64
		wantOK bool
	}{
		{"none", "data: x\n\n", 0, false},
		{"digits", "retry: 2500\n\n", 2500, true},
		{"last valid wins", "retry: 10\nretry: 20\nretry: x\n\n", 20, true},
		{"not digits", "retry: 1.5\n\n", 0, false},
		{"empty", "retry:\n\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.in), func() int64 { return 0 }, 0)
			if _, err := readAll(r); err != nil {
				t.Fatal(err)
			}
			got, ok := r.Retry()
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Retry() after %q = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestReaderTimestamps works through the clock readings by hand: the clock
// is the number of Read calls so far.
func TestReaderTimestamps(t *testing.T) {
	pieces := []string{
		": keep-alive\n\n",            // read 1: comment only
		"data: a\n",                   // read 2: event a not yet complete
		"\n",                          // read 3: completes a      → At 3
		": ka\n\n",                    // read 4: keep-alive, must not move b
		"data: b\n\ndata: c\n\ndata:", // read 5: completes b and c → At 5, 5
		" d\n\n",                      // read 6: completes d      → At 6
		"data: e",                     // read 7: e cut off at EOF  → At 7
	}
	var in string
	var cuts []int
	for _, s := range pieces {
		in += s
		cuts = append(cuts, len(in))
	}
	p := newPieceReader(in, cuts[:len(cuts)-1])
	got, err := readAll(NewReader(p, p.now, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []modelEvent{
		{Data: "a", Done: 3}, {Data: "b", Done: 5}, {Data: "c", Done: 5},
		{Data: "d", Done: 6}, {Data: "e", Done: 7, Truncated: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	// 7 reads with data and one (0, io.EOF): the clock was read once each.
	if p.calls != 8 {
		t.Errorf("Read calls = %d; want 8", p.calls)
	}
}

func TestReaderClockOncePerRead(t *testing.T) {
	in := strings.Repeat("data: x\n\n", 50)
	p := newPieceReader(in, []int{100, 200, 300})
	reads := 0
	r := NewReader(p, func() int64 { reads++; return int64(reads) }, 0)
	if _, err := readAll(r); err != nil {
		t.Fatal(err)
	}
	if reads != p.calls {
		t.Errorf("clock readings = %d; want one per Read, %d", reads, p.calls)
	}
}

func TestReaderRandomSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		in := randomStream(rng)
		want, _, _ := modelParse(in)
		p := newPieceReader(in, randomCuts(rng, len(in)))
		bufSize := 1 + rng.IntN(64) // small buffers force compaction and growth
		got, err := readAll(NewReader(p, p.now, bufSize))
		if err != nil {
			t.Fatalf("stream %d: Next error %v", i, err)
		}
		if diff := cmp.Diff(expectAt(want, p), got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("stream %d %q cuts %v (-want +got):\n%s", i, in, p.cuts, diff)
		}
	}
}

// randomStream builds a stream from pieces that exercise every rule.
func randomStream(rng *rand.Rand) string {
	parts := []string{
		"data: ", "data:", "data", "event: e", "id: 1", "id: a\x00", "retry: 5", ": c", ":",
		"x", "{\"a\":1}", " ", "[DONE]", "\uFEFF", "é", "foo: bar",
		"\n", "\n", "\n", "\r\n", "\r\n", "\r",
	}
	var b strings.Builder
	if rng.IntN(4) == 0 {
		b.WriteString("\uFEFF")
	}
	for range rng.IntN(40) {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

func randomCuts(rng *rand.Rand, n int) []int {
	if n < 2 {
		return nil
	}
	var cuts []int
	for i := 1; i < n; i++ {
		if rng.IntN(4) == 0 {
			cuts = append(cuts, i)
		}
	}
	return cuts
}

func TestReaderLongEvent(t *testing.T) {
	// A 4 MiB data line (far beyond any chunk, about a 1M-token context of
	// prompt logprobs) arriving in 1 KiB reads through a 4 KiB buffer.
	long := strings.Repeat("abcdefgh", 512<<10)
	in := "data: a\n\ndata: " + long + "\n\ndata: b\n\n"
	var cuts []int
	for i := 1024; i < len(in); i += 1024 {
		cuts = append(cuts, i)
	}
	p := newPieceReader(in, cuts)
	r := NewReader(p, p.now, 4096)
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Data != "a" || got[1].Data != long || got[2].Data != "b" {
		t.Fatalf("events = %d (data lengths %v); want a, %d bytes, b", len(got), lens(got), len(long))
	}
	// Each 1 KiB piece is read once, plus the EOF read, plus at most one
	// short read per buffer growth (4 KiB doubled 11 times is 8 MiB, the
	// first size that holds the 4 MiB event with the wanted free tail).
	if want := len(cuts) + 2 + 11; p.calls > want {
		t.Errorf("Read calls = %d; want ≤ %d", p.calls, want)
	}
	if len(r.buf) > 8<<20 {
		t.Errorf("buffer grew to %d bytes; want ≤ %d", len(r.buf), 8<<20)
	}
}

func lens(evs []modelEvent) []int {
	out := make([]int, len(evs))
	for i, e := range evs {
		out[i] = len(e.Data)
	}
	return out
}

func TestReaderEventTooLong(t *testing.T) {
	in := "data: ok\n\ndata: " + strings.Repeat("x", 10000) + "\n\n"
	r := NewReader(strings.NewReader(in), func() int64 { return 0 }, 512)
	r.SetMaxEventSize(4096)
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "ok" {
		t.Fatalf("first Next() = %q, %v; want ok, nil", ev.Data, err)
	}
	_, err = r.Next()
	if !errors.Is(err, ErrEventTooLong) {
		t.Fatalf("second Next() error = %v; want ErrEventTooLong", err)
	}
	if _, err2 := r.Next(); !errors.Is(err2, ErrEventTooLong) {
		t.Errorf("Next() after failure = %v; want the same error", err2)
	}
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	p := newPieceReader("data: a\n\ndata: b\n\ndata: partial", []int{10})
	p.err = boom
	r := NewReader(p, p.now, 0)
	var got []string
	var err error
	for {
		var ev Event
		ev, err = r.Next()
		if err != nil {
			break
		}
		got = append(got, string(ev.Data))
	}
	if !errors.Is(err, boom) {
		t.Errorf("Next() error = %v; want %v", err, boom)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("events before the error mismatch (-want +got):\n%s", diff)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderNoProgress(t *testing.T) {
	r := NewReader(zeroReader{}, func() int64 { return 0 }, 0)
	if _, err := r.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("Next() on a reader returning (0, nil) = %v; want io.ErrNoProgress", err)
	}
}

func TestReaderReset(t *testing.T) {
	r := NewReader(strings.NewReader("retry: 5\nevent: x\ndata: a"), func() int64 { return 0 }, 0)
	if _, err := readAll(r); err != nil {
		t.Fatal(err)
	}
	r.Reset(strings.NewReader("data: b\n\n"))
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]modelEvent{{Data: "b"}}, got); diff != "" {
		t.Errorf("events after Reset mismatch (-want +got):\n%s", diff)
	}
	if _, ok := r.Retry(); ok {
		t.Errorf("Retry() after Reset ok = true; want false")
	}
}

// loopReader serves the same stream forever, in reads of at most chunk bytes.
type loopReader struct {
	data  []byte
	pos   int
	chunk int
}

func (l *loopReader) Read(b []byte) (int, error) {
	if l.pos == len(l.data) {
		l.pos = 0
	}
	n := min(len(b), l.chunk, len(l.data)-l.pos)
	copy(b, l.data[l.pos:l.pos+n])
	l.pos += n
	return n, nil
}

const chunkEvent = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}` + "\n\n"

func TestReaderNoAllocs(t *testing.T) {
	tests := []struct {
		name  string
		event string
		chunk int
	}{
		{"one event per read", chunkEvent, len(chunkEvent)},
		{"events split across reads", chunkEvent, 37},
		{"multi-line data", "event: e\nid: 1\ndata: a\ndata: b\n\n", 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(&loopReader{data: []byte(tt.event), chunk: tt.chunk}, func() int64 { return 0 }, 0)
			for range 10 { // warm up dataBuf
				if _, err := r.Next(); err != nil {
					t.Fatal(err)
				}
			}
			allocs := testing.AllocsPerRun(1000, func() {
				if _, err := r.Next(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("allocations per Next = %v; want 0", allocs)
			}
		})
	}
}

func BenchmarkReaderLongLine(b *testing.B) {
	// One 1 MiB event in 16 KiB reads: cost must stay linear in its size.
	ev := "data: " + strings.Repeat("x", 1<<20) + "\n\n"
	r := NewReader(&loopReader{data: []byte(ev), chunk: 16 << 10}, func() int64 { return 0 }, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(ev)))
	for b.Loop() {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReader(b *testing.B) {
	for _, chunk := range []int{len(chunkEvent), 4096} {
		b.Run(fmt.Sprintf("read=%d", chunk), func(b *testing.B) {
			r := NewReader(&loopReader{data: []byte(chunkEvent), chunk: chunk}, func() int64 { return 0 }, 0)
			b.ReportAllocs()
			b.SetBytes(int64(len(chunkEvent)))
			for b.Loop() {
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\r\n\r\n"), uint64(1))
	f.Add([]byte("\uFEFFevent: x\rid: 1\rdata\r\r: c\ndata: [DONE]"), uint64(2))
	f.Add([]byte("retry: 10\ndata:  x\ndata:y\n\n\r\n"), uint64(3))
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		want, wantRetry, wantHasRetry := modelParse(string(in))
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		p := newPieceReader(string(in), randomCuts(rng, len(in)))
		r := NewReader(p, p.now, 1+int(seed%97))
		got, err := readAll(r)
		if err != nil {
			t.Fatalf("Next error %v", err)
		}
		if diff := cmp.Diff(expectAt(want, p), got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("events of %q (cuts %v) differ from the model (-want +got):\n%s", in, p.cuts, diff)
		}
		if ms, ok := r.Retry(); ms != wantRetry || ok != wantHasRetry {
			t.Errorf("Retry() = %d, %v; want %d, %v", ms, ok, wantRetry, wantHasRetry)
		}

		// Writer → Reader round trip with the input as data: line breaks
		// come back as LF, everything else unchanged.
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if err := w.WriteEvent("t", "9", in); err != nil {
			t.Fatalf("WriteEvent error %v", err)
		}
		if err := w.WriteComment("keep-alive"); err != nil {
			t.Fatalf("WriteComment error %v", err)
		}
		evs, err := readAll(NewReader(&buf, func() int64 { return 0 }, 16))
		if err != nil {
			t.Fatal(err)
		}
		norm := strings.ReplaceAll(strings.ReplaceAll(string(in), "\r\n", "\n"), "\r", "\n")
		rt := []modelEvent{{Type: "t", HasType: true, ID: "9", HasID: true, Data: norm}}
		if diff := cmp.Diff(rt, evs); diff != "" {
			t.Errorf("round trip of %q mismatch (-want +got):\n%s", in, diff)
		}
	})
}

func TestReaderJoinedDataTooLong(t *testing.T) {
	// Each data line is short, but an event of endless data lines (no blank
	// line ever) must not grow without bound: the joined data counts
	// against the same limit as one long line.
	in := "data: ok\n\n" + strings.Repeat("data: xxxxxxxxxxxxxxx\n", 1000)
	r := NewReader(strings.NewReader(in), func() int64 { return 0 }, 512)
	r.SetMaxEventSize(4096)
	if ev, err := r.Next(); err != nil || string(ev.Data) != "ok" {
		t.Fatalf("first Next() = %q, %v; want ok, nil", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLong) {
		t.Fatalf("second Next() error = %v; want ErrEventTooLong", err)
	}
	// Below the limit, many data lines still join.
	in = strings.Repeat("data: xxxxxxxxxxxxxxx\n", 100) + "\n"
	r = NewReader(strings.NewReader(in), func() int64 { return 0 }, 512)
	r.SetMaxEventSize(4096)
	if ev, err := r.Next(); err != nil || len(ev.Data) != 100*15+99 {
		t.Errorf("Next() = %d bytes, %v; want %d, nil", len(ev.Data), err, 100*15+99)
	}
}
