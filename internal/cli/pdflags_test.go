package cli

import (
	"strings"
	"testing"
)

func TestParseRatios(t *testing.T) {
	got, err := parseRatios(" 1:3, 2 : 2,3:1")
	if err != nil || len(got) != 3 || got[0] != (pdRatio{1, 3}) || got[1] != (pdRatio{2, 2}) || got[2] != (pdRatio{3, 1}) {
		t.Errorf("parseRatios = %v, %v; want 1:3 2:2 3:1", got, err)
	}
	for _, bad := range []string{"", "1", "1:0", "0:1", "a:b", "1:3,1:2", "1:-1", "1:3,", strings.Repeat("1:1,", 17) + "1:1", "40000:40000"} {
		if r, err := parseRatios(bad); err == nil {
			t.Errorf("parseRatios(%q) = %v; want an error", bad, r)
		}
	}
}

// FuzzParseRatios: whatever it reads has pools ≥ 1 of one total, at most
// maxRatios of them, and a refusal is an error, never a panic.
func FuzzParseRatios(f *testing.F) {
	for _, s := range []string{"1:3,2:2,3:1", "1:1", "", "1:", ":1", "2:2,,", "9999999999999999999:1", " 3 : 1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := parseRatios(s)
		if err != nil {
			return
		}
		if len(rs) == 0 || len(rs) > maxRatios {
			t.Fatalf("parseRatios(%q) = %d splits", s, len(rs))
		}
		for _, r := range rs {
			if r.prefill < 1 || r.decode < 1 || r.prefill+r.decode != rs[0].prefill+rs[0].decode {
				t.Fatalf("parseRatios(%q) = %v", s, rs)
			}
		}
	})
}
