package sse

import (
	"bufio"
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"
)

func TestWriterWriteEvent(t *testing.T) {
	tests := []struct {
		name     string
		typ, id  string
		data     string
		wantWire string
	}{
		{"data only", "", "", "hi", "data: hi\n\n"},
		{"all fields", "delta", "42", "x", "event: delta\nid: 42\ndata: x\n\n"},
		{"empty data", "", "", "", "data: \n\n"},
		{"LF lines", "", "", "a\nb", "data: a\ndata: b\n\n"},
		{"CRLF and CR lines", "", "", "a\r\nb\rc", "data: a\ndata: b\ndata: c\n\n"},
		{"trailing newline", "", "", "a\n", "data: a\ndata: \n\n"},
		{"leading space kept", "", "", " a", "data:  a\n\n"},
		{"DONE", "", "", "[DONE]", "data: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := NewWriter(&buf).WriteEvent(tt.typ, tt.id, []byte(tt.data)); err != nil {
				t.Fatalf("WriteEvent(%q, %q, %q) error %v", tt.typ, tt.id, tt.data, err)
			}
			if got := buf.String(); got != tt.wantWire {
				t.Errorf("WriteEvent(%q, %q, %q) wrote %q; want %q", tt.typ, tt.id, tt.data, got, tt.wantWire)
			}
		})
	}
}

func TestWriterBadFields(t *testing.T) {
	tests := []struct {
		name    string
		typ, id string
	}{
		{"newline in type", "a\nb", ""},
		{"CR in type", "a\rdata: x", ""},
		{"newline in id", "", "1\n2"},
		{"NUL in id", "", "1\x002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := NewWriter(&buf).WriteEvent(tt.typ, tt.id, []byte("x"))
			if !errors.Is(err, ErrBadField) {
				t.Errorf("WriteEvent(%q, %q) error = %v; want ErrBadField", tt.typ, tt.id, err)
			}
			if buf.Len() != 0 {
				t.Errorf("WriteEvent(%q, %q) wrote %q; want nothing", tt.typ, tt.id, buf.String())
			}
		})
	}
}

func TestWriterComment(t *testing.T) {
	var buf bytes.Buffer
	if err := NewWriter(&buf).WriteComment("ping\npong"); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), ": ping\n: pong\n"; got != want {
		t.Errorf("WriteComment(%q) wrote %q; want %q", "ping\npong", got, want)
	}
}

// TestWriterFlushes checks that every event reaches the client at once, for
// both flush method shapes.
func TestWriterFlushes(t *testing.T) {
	t.Run("http.Flusher", func(t *testing.T) {
		rec := httptest.NewRecorder()
		w := NewWriter(rec)
		if err := w.WriteEvent("", "", []byte("a")); err != nil {
			t.Fatal(err)
		}
		if !rec.Flushed {
			t.Errorf("ResponseRecorder.Flushed = false after WriteEvent; want true")
		}
	})
	t.Run("bufio.Writer", func(t *testing.T) {
		var out bytes.Buffer
		w := NewWriter(bufio.NewWriterSize(&out, 4096))
		if err := w.WriteEvent("", "", []byte("a")); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), "data: a\n\n"; got != want {
			t.Errorf("bytes past the bufio.Writer = %q; want %q", got, want)
		}
		if err := w.WriteComment("k"); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), "data: a\n\n: k\n"; got != want {
			t.Errorf("bytes past the bufio.Writer = %q; want %q", got, want)
		}
	})
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestWriterError(t *testing.T) {
	boom := errors.New("broken pipe")
	if err := NewWriter(failWriter{boom}).WriteEvent("", "", []byte("x")); !errors.Is(err, boom) {
		t.Errorf("WriteEvent on a failing writer = %v; want %v wrapped", err, boom)
	}
}

func TestWriterNoAllocs(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	data := []byte(`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`)
	allocs := testing.AllocsPerRun(1000, func() {
		buf.Reset()
		if err := w.WriteEvent("", "", data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("allocations per WriteEvent = %v; want 0", allocs)
	}
}
