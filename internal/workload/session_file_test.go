package workload

import "testing"

// TestLoadSessionFile: each format is read by its own loader, picked by
// the Mooncake flag and the extension; a cap of 1 keeps one session of
// any.
func TestLoadSessionFile(t *testing.T) {
	for _, f := range []SessionFile{
		{Path: "testdata/sessions/chat.jsonl"},
		{Path: "testdata/sessions/mooncake.jsonl", Mooncake: true},
		{Path: "testdata/sessions/sharegpt.json", NoShuffle: true},
	} {
		all, err := LoadSessionFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		f.NumSessions = 1
		one, err := LoadSessionFile(f)
		if err != nil {
			t.Fatalf("%s capped: %v", f.Path, err)
		}
		if all.Len() < 2 || one.Len() != 1 {
			t.Errorf("%s: %d sessions, capped %d: want ≥ 2 and 1", f.Path, all.Len(), one.Len())
		}
	}
}
