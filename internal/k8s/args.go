package k8s

import (
	"strconv"
	"strings"
)

// BenchRun is how the shard pods run goodput bench: against BaseURL as
// shard $JOB_COMPLETION_INDEX of Shards, started at the rendezvous of the
// Job Name on Port or at StartAt, their records on the claim (RecordsClaim
// set) or in their logs, then Bench, bench's own flags as the user gave
// them, with --dataset-path's value replaced by Dataset where set.
type BenchRun struct {
	Name         string
	Port         int
	Shards       int
	BaseURL      string
	StartAt      string
	RecordsClaim string
	// Quiet says Bench already holds --quiet.
	Quiet   bool
	Dataset string
	Bench   []string
}

// BenchOwned are bench's flags the Job sets itself, which Bench must not
// hold.
var BenchOwned = []string{"base-url", "host", "port", "shard", "shards", "start-at", "rendezvous", "records"}

// BenchArgs are the shard pods' arguments (JobSpec.Args).
func BenchArgs(r BenchRun) []string {
	args := []string{"bench", "--base-url", r.BaseURL, "--shards", strconv.Itoa(r.Shards)}
	if r.StartAt != "" {
		args = append(args, "--start-at", r.StartAt)
	} else {
		args = append(args, "--rendezvous", Rendezvous(r.Name, r.Port))
	}
	if r.RecordsClaim != "" {
		args = append(args, "--records", ShardRecords(ShardIndexRef))
	} else {
		// The records are the pod's stdout, alone: bench sends its
		// summary and notes to stderr then, each line marked as its own
		// (runlog.OwnLinePrefix), so the log kubectl logs merges from the
		// two streams reads back as a records file.
		args = append(args, "--records", "/dev/stdout", "--overwrite")
	}
	if !r.Quiet {
		args = append(args, "--quiet")
	}
	bench := r.Bench
	if r.Dataset != "" {
		bench = withDatasetPath(bench, r.Dataset)
	}
	return append(args, bench...)
}

// withDatasetPath returns a copy of bench's flags with --dataset-path's
// value replaced by in, where the pods read the file.
func withDatasetPath(bench []string, in string) []string {
	out := make([]string, len(bench))
	copy(out, bench)
	for i := 0; i < len(out); i++ {
		switch a := out[i]; {
		case a == "--dataset-path" && i+1 < len(out):
			out[i+1] = in
			i++
		case strings.HasPrefix(a, "--dataset-path="):
			out[i] = "--dataset-path=" + in
		}
	}
	return out
}

// CollectArgs are the collector's arguments (CollectSpec.Args): goodput
// report over every shard's records file on the claim, the merged result
// JSON saved to MergedPath, then report's own flags.
func CollectArgs(shards int, report []string) []string {
	args := []string{"report"}
	for i := range shards {
		args = append(args, ShardRecords(strconv.Itoa(i)))
	}
	args = append(args, "--json", MergedPath)
	return append(args, report...)
}
