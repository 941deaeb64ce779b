package shard

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzParseShard: any input is an I/N with 0 ≤ I < N ≤ MaxCount that
// reads back, or a one-line error; never a panic.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "3/4", " 1 / 2 ", "4/4", "-1/2", "1/0", "a/b", "1/2/3", "", "/", "99999999999999999999/1", "0/10000", "0/10001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		i, n, err := Parse(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("Parse(%q) error %q: want one line", s, err)
			}
			return
		}
		if n < 1 || n > MaxCount || i < 0 || i >= n {
			t.Fatalf("Parse(%q) = %d/%d: out of range", s, i, n)
		}
		if j, m, err := Parse(fmt.Sprintf("%d/%d", i, n)); err != nil || j != i || m != n {
			t.Fatalf("Parse(%q) = %d/%d, which does not read back (%d/%d, %v)", s, i, n, j, m, err)
		}
	})
}

// TestParseShardErrors: each way of getting I/N wrong says which.
func TestParseShardErrors(t *testing.T) {
	for s, want := range map[string]string{
		"2/2": "the index counts from 0: want 0 to 1", "0/0": "want 1 to 10000 shards",
		"one-of-two": "want I/N, shard I (from 0) of N, e.g. 0/4", "a/b": "want I/N with whole numbers, e.g. 0/4",
	} {
		if _, _, err := Parse(s); err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v; want %q", s, err, want)
		}
	}
}

// FuzzParseStartAt: any input is an instant that reads back the same, or an
// error; never a panic.
func FuzzParseStartAt(f *testing.F) {
	for _, s := range []string{"2026-12-01T10:00:00Z", "2026-12-01T10:00:00.123456789+02:00", "2026-12-01 10:00:00", "tomorrow", "", "2026-13-01T00:00:00Z", "9999-12-31T23:59:59Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, err := ParseStartAt(s)
		if err != nil {
			return
		}
		back, err := ParseStartAt(at.Format(time.RFC3339Nano))
		if err != nil || !back.Equal(at) {
			t.Fatalf("ParseStartAt(%q) = %v, which does not read back (%v, %v)", s, at, back, err)
		}
	})
}
