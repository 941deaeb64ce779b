package wire

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

func TestReplicaOf(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   int
	}{
		{"", 0},      // not a fleet
		{"0", 0},     // replicas are numbered from 1: "0" names none
		{"1", 1},     // engine="1" is record replica 1
		{"4", 4},     // the same numbers on both sides
		{"-1", 0},    // not a number from 1
		{"x", 0},     // not a number
		{"65536", 0}, // beyond what a record holds
		{"65535", 65535},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(ReplicaHeader, tc.header)
		}
		if got := ReplicaOf(h); got != tc.want {
			t.Errorf("ReplicaOf(%s: %q) = %d; want %d", ReplicaHeader, tc.header, got, tc.want)
		}
	}
}

// FuzzReplicaOf: any header value gives 0 or a replica number a record
// holds, and a number comes only from the same decimal number.
func FuzzReplicaOf(f *testing.F) {
	for _, s := range []string{"", "0", "7", "-1", "65535", "65536", "x", "+3", " 1", "01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set(ReplicaHeader, v)
		n := ReplicaOf(h)
		if n < 0 || n > runlog.MaxReplica {
			t.Fatalf("ReplicaOf(%q) = %d: outside 0..%d", v, n, runlog.MaxReplica)
		}
		if n > 0 {
			if i, err := strconv.Atoi(h.Get(ReplicaHeader)); err != nil || i != n {
				t.Fatalf("ReplicaOf(%q) = %d, but the header reads as %d, %v", v, n, i, err)
			}
		}
	})
}
