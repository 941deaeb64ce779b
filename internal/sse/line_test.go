package sse

import "testing"

func TestLineEnd(t *testing.T) {
	tests := []struct {
		in string
		i  int
		cr bool
	}{
		{"data: x\n", 7, false},
		{"data: x\r\n", 7, true},
		{"data: x\rmore\n", 7, true},
		{"a\nb\r", 1, false}, // the CR after the first LF is the next line's
		{"no ending", -1, false},
		{"", -1, false},
		{"\n", 0, false},
	}
	for _, tt := range tests {
		if i, cr := LineEnd([]byte(tt.in)); i != tt.i || cr != tt.cr {
			t.Errorf("LineEnd(%q) = %d, %v; want %d, %v", tt.in, i, cr, tt.i, tt.cr)
		}
	}
}

func TestSplitField(t *testing.T) {
	tests := []struct{ in, name, value string }{
		{"data: {\"a\":1}", "data", "{\"a\":1}"},
		{"data:x", "data", "x"},
		{"data:  two", "data", " two"}, // only one space is dropped
		{"data", "data", ""},
		{"event: ping", "event", "ping"},
		{"id:", "id", ""},
		{"x: a: b", "x", "a: b"},
	}
	for _, tt := range tests {
		name, value := SplitField([]byte(tt.in))
		if string(name) != tt.name || string(value) != tt.value {
			t.Errorf("SplitField(%q) = %q, %q; want %q, %q", tt.in, name, value, tt.name, tt.value)
		}
	}
}
