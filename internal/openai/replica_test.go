package openai

import (
	"net/http"
	"testing"
)

func TestReplicaOf(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   int
	}{
		{"", 0},      // not a fleet
		{"0", 1},     // engine="0" is record replica 1
		{"3", 4},     // engine="3" is replica 4
		{"-1", 0},    // not an index
		{"x", 0},     // not a number
		{"65535", 0}, // replica 65536: beyond what a record holds
		{"65534", 65535},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(ReplicaHeader, tc.header)
		}
		if got := replicaOf(h); got != tc.want {
			t.Errorf("replicaOf(%s: %q) = %d; want %d", ReplicaHeader, tc.header, got, tc.want)
		}
	}
}
