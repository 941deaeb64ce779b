package shard

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/workload"
)

// settingErr checks that err, returned by call, is a *setting.Error
// starting with want (fields named by their paths), or nil when want is "".
func settingErr(t *testing.T, call string, err error, want string) {
	t.Helper()
	var se *setting.Error
	switch {
	case want == "" && err != nil:
		t.Errorf("%s = %v; want no error", call, err)
	case want != "" && (!errors.As(err, &se) || !strings.HasPrefix(se.Error(), want)):
		t.Errorf("%s = %v (%T); want a *setting.Error %q", call, err, err, want)
	}
}

func TestShardSpecErrors(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		spec  Spec
		index string
		want  string
	}{
		{Spec{Shard: "1/2"}, "", ""},
		{Spec{Shards: 3}, "2", ""},
		{Spec{Shard: "0/2", Shards: 2}, "", "Shard 0/2 and Shards 2: give one (Shards takes the index from JOB_COMPLETION_INDEX)"},
		{Spec{Shard: "2/2"}, "", `Shard "2/2": the index counts from 0: want 0 to 1`},
		{Spec{Shards: -1}, "", "Shards -1: want 1 to 10000"},
		{Spec{Shards: 3}, " ", "Shards 3 takes this shard's index from JOB_COMPLETION_INDEX"},
		{Spec{Shards: 3}, "7", `Shards 3: JOB_COMPLETION_INDEX="7": want an index from 0 to 2`},
		{Spec{StartAt: "tomorrow"}, "", `StartAt "tomorrow": want an RFC 3339 instant`},
		{Spec{StartAt: "2026-12-01T09:00:00Z"}, "", "StartAt 2026-12-01T09:00:00Z is 1h0m0s in the past"},
		{Spec{Rendezvous: "h:1"}, "", "Rendezvous h:1 agrees the start between shards: give Shard I/N or Shards N"},
		{Spec{Shard: "0/2", Rendezvous: "h:1", StartAt: "2026-12-01T10:01:00Z"}, "", "Rendezvous: sets the start: give it or StartAt, not both"},
	} {
		sh, _, err := c.spec.Build(c.index, now)
		settingErr(t, fmt.Sprintf("%+v.Build(%q)", c.spec, c.index), err, c.want)
		if c.want == "" && sh == nil {
			t.Errorf("%+v: no shard", c.spec)
		}
	}
}

func TestShardJobErrors(t *testing.T) {
	now := time.Now()
	job := func(f func(*Job)) *Job {
		j := &Job{Name: "b", Shards: 2, BaseURL: "http://x", Image: "i", CPU: "2", Memory: "1Gi", Port: 7077, Spread: "preferred",
			Bench: JobBench{Workload: &workload.Options{}, APIKeyEnv: "K"}}
		f(j)
		return j
	}
	read := func(p string) ([]byte, error) {
		if p == "missing" {
			return nil, errors.New("no such file")
		}
		return []byte{0xff}, nil
	}
	for _, c := range []struct {
		job  *Job
		want string
	}{
		{job(func(*Job) {}), ""},
		{job(func(j *Job) { j.Shards = 0 }), "Shards 0: want 1 to 10000 pods"},
		{job(func(j *Job) { j.BaseURL = "" }), "BaseURL: give the server's root URL"},
		{job(func(j *Job) { j.BaseURL = "x:1" }), `BaseURL "x:1": want an http(s) URL`},
		{job(func(j *Job) { j.CPU = "2x" }), `CPU "2x": want a CPU quantity`},
		{job(func(j *Job) { j.StartAt = "soon" }), `StartAt "soon": want an RFC 3339`},
		{job(func(j *Job) { j.APIKeySecret = "nokey" }), `APIKeySecret "nokey": want NAME/KEY`},
		{job(func(j *Job) { j.APIKeySecret, j.Bench.APIKeyEnv = "s/k", "" }), "APIKeySecret needs bench's Bench.APIKeyEnv"},
		{job(func(j *Job) { j.Bench.Workload.DatasetPath = "missing" }), "Bench.Workload.DatasetPath missing: no such file (the file goes into a ConfigMap)"},
		{job(func(j *Job) { j.Bench.Workload.DatasetPath = "bin" }), "Bench.Workload.DatasetPath bin: not UTF-8 text"},
		{job(func(j *Job) { j.Bench.Rest = []string{"x"} }), `after --: unexpected argument "x" (bench takes flags only)`},
		{job(func(j *Job) { j.Bench.Rest, j.Bench.SLO = []string{"tpot:50"}, true }), ""},
		{job(func(j *Job) { j.Bench.Given = func(f string) bool { return f == "records" } }),
			"after --: --records is the Job's to set (give goodput k8s job BaseURL, Shards, StartAt, RecordsClaim)"},
	} {
		_, _, err := c.job.Manifests(now, read)
		settingErr(t, fmt.Sprintf("%+v.Manifests", *c.job), err, c.want)
	}
	for _, c := range []struct {
		c    Collect
		want string
	}{
		{Collect{Name: "b", Shards: 2, Image: "i", RecordsClaim: "r"}, ""},
		{Collect{Name: "b", Shards: 0, Image: "i", RecordsClaim: "r"}, "Shards 0: want 1 to 10000"},
		{Collect{Name: "b", Shards: 2, Image: "i"}, "RecordsClaim: give the claim"},
		{Collect{Name: "B", Shards: 2, Image: "i", RecordsClaim: "r"}, `Name "B": want lowercase`},
		{Collect{Name: "b", Shards: 2, Image: "i", RecordsClaim: "r", ReportRest: []string{"f"}}, `after --: unexpected argument "f"`},
		{Collect{Name: "b", Shards: 2, Image: "i", RecordsClaim: "r", ReportGiven: func(f string) bool { return f == "json" }},
			"after --: --json is the Job's to set (/records/merged.json)"},
	} {
		_, _, err := c.c.Manifests()
		settingErr(t, fmt.Sprintf("%+v.Manifests", c.c), err, c.want)
	}
}
