package k8s

import (
	"slices"
	"testing"
)

// TestBenchArgs: the Job's own flags first, then bench's as given with the
// dataset path pointed at the ConfigMap's mount, in both spellings.
func TestBenchArgs(t *testing.T) {
	got := BenchArgs(BenchRun{Name: "b", Port: 7077, Shards: 4, BaseURL: "http://s:8000", Dataset: "/workload/d.jsonl",
		Bench: []string{"--dataset-path", "d.jsonl", "--dataset-path=e.jsonl", "--seed", "1"}})
	want := []string{"bench", "--base-url", "http://s:8000", "--shards", "4", "--rendezvous", "b-0.b:7077",
		"--records", "/dev/stdout", "--overwrite", "--quiet",
		"--dataset-path", "/workload/d.jsonl", "--dataset-path=/workload/d.jsonl", "--seed", "1"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = BenchArgs(BenchRun{Shards: 2, BaseURL: "http://s", StartAt: "2026-12-01T10:00:00Z", RecordsClaim: "c", Quiet: true})
	want = []string{"bench", "--base-url", "http://s", "--shards", "2", "--start-at", "2026-12-01T10:00:00Z",
		"--records", "/records/shard-$(SHARD_INDEX).records.jsonl"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got, want := CollectArgs(2, []string{"--force"}), []string{"report", "/records/shard-0.records.jsonl",
		"/records/shard-1.records.jsonl", "--json", "/records/merged.json", "--force"}; !slices.Equal(got, want) {
		t.Errorf("CollectArgs = %q; want %q", got, want)
	}
}
