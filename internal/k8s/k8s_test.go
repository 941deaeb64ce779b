package k8s

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the golden manifests under testdata/")

// benchArgs are the arguments goodput's CLI gives a Job's pods.
func benchArgs(target string, shards int, rest ...string) []string {
	return append([]string{"bench", "--base-url", target, "--shards", strconv.Itoa(shards)}, rest...)
}

// validJob is a JobSpec Job takes; each check case breaks one field.
func validJob() JobSpec {
	return JobSpec{Name: "goodput-bench", Shards: 4, Image: "goodput:latest", CPU: "2", Memory: "1Gi", Port: 7077, Spread: SpreadPreferred,
		Args: benchArgs("http://vllm:8000", 4, "--rendezvous", Rendezvous("goodput-bench", 7077))}
}

func validCollect() CollectSpec {
	return CollectSpec{Name: "goodput-bench", Shards: 2, Image: "goodput:latest", RecordsClaim: "results", Args: []string{"report"}}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

// The manifests are byte for byte what kubectl is given. The golden files
// were first written by goodput k8s job and collect before this package was
// split from the CLI, so a change to them is a change to what users apply.
func TestGolden(t *testing.T) {
	rdv := Rendezvous("goodput-bench", 7077)
	jobs := []struct {
		name  string
		spec  JobSpec
		sched Schedule
	}{
		{"job_secret.yaml", JobSpec{Name: "goodput-bench", Shards: 4, Image: "goodput:latest", CPU: "2", Memory: "1Gi", Port: 7077, Spread: SpreadPreferred,
			APIKey: &SecretKey{Name: "llm-key", Key: "token"}, APIKeyEnv: "OPENAI_API_KEY",
			Args: benchArgs("http://vllm.serving:8000", 4, "--rendezvous", rdv, "--records", "/dev/stdout", "--overwrite", "--quiet",
				"--backend", "openai-chat", "--request-rate", "400", "--num-prompts", "40000")},
			Schedule{Target: "http://vllm.serving:8000", Grace: 2 * time.Second}},
		{"job_claim_workload.yaml", JobSpec{Name: "goodput-bench", Shards: 2, Image: "goodput:latest", CPU: "2", Memory: "1Gi", Port: 7077, Spread: SpreadPreferred,
			RecordsClaim: "results", Workload: &File{Name: "p.jsonl", Data: []byte(`{"prompt":"hi","output_tokens":4}` + "\n")},
			Args: benchArgs("http://vllm:8000", 2, "--rendezvous", rdv, "--records", ShardRecords(ShardIndexRef), "--quiet",
				"--dataset-name", "custom", "--dataset-path", WorkloadPath("p.jsonl"))},
			Schedule{Target: "http://vllm:8000", Grace: 2 * time.Second}},
		{"job_required_namespace.yaml", JobSpec{Name: "mybench", Namespace: "load", Shards: 3, Image: "goodput:latest", CPU: "500m", Memory: "2Gi", Port: 9000,
			Spread: SpreadRequired, APIKey: &SecretKey{Name: "llm", Key: "api-key"}, APIKeyEnv: "OPENAI_API_KEY",
			Workload: &File{Name: "p.jsonl", Data: []byte(`{"prompt":"hi","output_tokens":4}` + "\n")},
			Args: benchArgs("http://vllm:8000", 3, "--rendezvous", Rendezvous("mybench", 9000), "--records", "/dev/stdout", "--overwrite", "--quiet",
				"--request-rate", "100", "--dataset-name", "custom", "--dataset-path", WorkloadPath("p.jsonl"))},
			Schedule{Target: "http://vllm:8000", Grace: 2 * time.Second}},
		{"job_start_at_claim.yaml", JobSpec{Name: "goodput-bench", Namespace: "ns", Shards: 2, Image: "goodput:latest", CPU: "2", Memory: "1Gi", Port: 7077,
			Spread: SpreadPreferred, RecordsClaim: "rc",
			Args: benchArgs("http://x:1", 2, "--start-at", "2026-12-01T10:05:00Z", "--records", ShardRecords(ShardIndexRef), "--quiet")},
			Schedule{Target: "http://x:1", StartAt: "2026-12-01T10:05:00Z", Grace: 2 * time.Second}},
	}
	for _, tc := range jobs {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Job(tc.spec)
			if err != nil {
				t.Fatalf("Job: %v", err)
			}
			var b bytes.Buffer
			if err := Write(&b, JobHead(tc.spec, tc.sched), docs); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.String())
		})
	}
	t.Run("collect.yaml", func(t *testing.T) {
		s := CollectSpec{Name: "foo", Namespace: "ns", Shards: 3, Image: "img:1", RecordsClaim: "results",
			Args: []string{"report", ShardRecords("0"), ShardRecords("1"), ShardRecords("2"), "--json", MergedPath, "--percentile-metrics", "ttft,e2el"}}
		docs, err := Collect(s)
		if err != nil {
			t.Fatalf("Collect: %v", err)
		}
		var b bytes.Buffer
		if err := Write(&b, CollectHead(s), docs); err != nil {
			t.Fatal(err)
		}
		golden(t, "collect.yaml", b.String())
	})
}

// decode decodes Write's stream back into documents.
func decode(t *testing.T, docs []Manifest) []map[string]any {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, "# head\n", docs); err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(&b)
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Write's output is not YAML: %v", err)
		}
		out = append(out, d)
	}
}

// dig walks a decoded document by keys and list indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// What the options add to the pods: the ConfigMap comes first (it must
// exist before the pods mount it), the claim brings SHARD_INDEX (for
// ShardIndexRef) before the key's variable, the key is a reference and
// never a value.
func TestJobOptions(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		workload, claim, secret bool
		wantKinds               []string
		wantEnv                 []string
	}{
		{name: "bare", wantKinds: []string{"Service", "Job"}},
		{name: "workload", workload: true, wantKinds: []string{"ConfigMap", "Service", "Job"}},
		{name: "claim", claim: true, wantKinds: []string{"Service", "Job"}, wantEnv: []string{"SHARD_INDEX"}},
		{name: "secret", secret: true, wantKinds: []string{"Service", "Job"}, wantEnv: []string{"API_KEY"}},
		{name: "all", workload: true, claim: true, secret: true, wantKinds: []string{"ConfigMap", "Service", "Job"}, wantEnv: []string{"SHARD_INDEX", "API_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validJob()
			if tc.workload {
				s.Workload = &File{Name: "w.jsonl", Data: []byte("{}\n")}
			}
			if tc.claim {
				s.RecordsClaim = "results"
			}
			if tc.secret {
				s.APIKey, s.APIKeyEnv = &SecretKey{Name: "llm", Key: "key"}, "API_KEY"
			}
			docs, err := Job(s)
			if err != nil {
				t.Fatalf("Job: %v", err)
			}
			var kinds []string
			for _, d := range docs {
				kinds = append(kinds, d.Kind)
			}
			if diff := cmp.Diff(tc.wantKinds, kinds); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
			ds := decode(t, docs)
			job := ds[len(ds)-1]
			c := dig(job, "spec", "template", "spec", "containers", 0)
			var env []string
			for i := 0; dig(c, "env", i) != nil; i++ {
				env = append(env, dig(c, "env", i, "name").(string))
				if dig(c, "env", i, "value") != nil {
					t.Errorf("env %d has a value: %v", i, dig(c, "env", i))
				}
			}
			if diff := cmp.Diff(tc.wantEnv, env); diff != "" {
				t.Errorf("env names (-want +got):\n%s", diff)
			}
			if got := fmt.Sprint(dig(c, "args")); got != fmt.Sprint(s.Args) {
				t.Errorf("args %s; want the spec's %s", got, s.Args)
			}
			if tc.workload && dig(ds[0], "data", "w.jsonl") != "{}\n" {
				t.Errorf("ConfigMap %v; want the file under its name", ds[0])
			}
		})
	}
}

// Each rule of Check, one broken field at a time: the error is a
// *SpecError naming the field, and reads without a flag's name.
func TestJobCheck(t *testing.T) {
	long := strings.Repeat("a", 62)
	for _, tc := range []struct {
		name  string
		edit  func(*JobSpec)
		field string // "" valid
	}{
		{"valid", func(*JobSpec) {}, ""},
		{"required spread", func(s *JobSpec) { s.Spread = SpreadRequired }, ""},
		{"quantities", func(s *JobSpec) { s.CPU, s.Memory = "500m", "1.5Gi" }, ""},
		{"namespace", func(s *JobSpec) { s.Namespace = "load-1" }, ""},
		{"one shard, a long name", func(s *JobSpec) { s.Shards, s.Name = 1, long[:61] }, ""},
		{"no shards", func(s *JobSpec) { s.Shards = 0 }, "Shards"},
		{"no image", func(s *JobSpec) { s.Image = " " }, "Image"},
		{"image with a space", func(s *JobSpec) { s.Image = "goodput latest" }, "Image"},
		{"cpu", func(s *JobSpec) { s.CPU = "2 cores" }, "CPU"},
		{"no cpu", func(s *JobSpec) { s.CPU = "" }, "CPU"},
		{"memory", func(s *JobSpec) { s.Memory = "1GB" }, "Memory"},
		{"port 0", func(s *JobSpec) { s.Port = 0 }, "Port"},
		{"port 65536", func(s *JobSpec) { s.Port = 65536 }, "Port"},
		{"no spread", func(s *JobSpec) { s.Spread = "" }, "Spread"},
		{"spread", func(s *JobSpec) { s.Spread = "maybe" }, "Spread"},
		{"claim", func(s *JobSpec) { s.RecordsClaim = "Results" }, "RecordsClaim"},
		{"name", func(s *JobSpec) { s.Name = "Bench" }, "Name"},
		{"no name", func(s *JobSpec) { s.Name = "" }, "Name"},
		{"name ends in -", func(s *JobSpec) { s.Name = "bench-" }, "Name"},
		{"pods' hostnames too long", func(s *JobSpec) { s.Name = long }, "Name"},
		{"namespace", func(s *JobSpec) { s.Namespace = "Load" }, "Namespace"},
		{"namespace too long", func(s *JobSpec) { s.Namespace = long + "aa" }, "Namespace"},
		{"workload", func(s *JobSpec) { s.Workload = &File{Name: "w.jsonl", Data: []byte("{}")} }, ""},
		{"workload too big", func(s *JobSpec) { s.Workload = &File{Name: "w.jsonl", Data: make([]byte, MaxFileBytes+1)} }, "Workload"},
		{"workload at the size", func(s *JobSpec) { s.Workload = &File{Name: "w.jsonl", Data: make([]byte, MaxFileBytes)} }, ""},
		{"workload not UTF-8", func(s *JobSpec) { s.Workload = &File{Name: "w.jsonl", Data: []byte{0xff}} }, "Workload"},
		{"workload's name", func(s *JobSpec) { s.Workload = &File{Name: "my file.jsonl"} }, "Workload"},
		{"secret", func(s *JobSpec) { s.APIKey, s.APIKeyEnv = &SecretKey{Name: "llm", Key: "api_key.1"}, "K" }, ""},
		{"secret's name", func(s *JobSpec) { s.APIKey, s.APIKeyEnv = &SecretKey{Name: "LLM", Key: "k"}, "K" }, "APIKey.Name"},
		{"no secret name", func(s *JobSpec) { s.APIKey, s.APIKeyEnv = &SecretKey{Key: "k"}, "K" }, "APIKey.Name"},
		{"secret's name too long", func(s *JobSpec) { s.APIKey, s.APIKeyEnv = &SecretKey{Name: strings.Repeat("a", 254), Key: "k"}, "K" }, "APIKey.Name"},
		{"no secret key", func(s *JobSpec) { s.APIKey, s.APIKeyEnv = &SecretKey{Name: "llm"}, "K" }, "APIKey.Key"},
		{"secret key with a slash", func(s *JobSpec) { s.APIKey, s.APIKeyEnv = &SecretKey{Name: "llm", Key: "a/b"}, "K" }, "APIKey.Key"},
		{"no variable for the key", func(s *JobSpec) { s.APIKey = &SecretKey{Name: "llm", Key: "k"} }, "APIKeyEnv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validJob()
			tc.edit(&s)
			err := s.Check()
			checkErr(t, "Check", err, tc.field)
			docs, jerr := Job(s)
			checkErr(t, "Job", jerr, tc.field)
			if jerr == nil && len(docs) == 0 {
				t.Errorf("Job = no documents, nil error")
			}
		})
	}
}

// The first field at fault is reported, in the order the spec lists them
// (shards, image, resources, port, spread, claim, name), so that a caller
// checking early reports what it reported before.
func TestJobCheckOrder(t *testing.T) {
	s := validJob()
	s.Image, s.CPU, s.Name = "", "x", "X"
	if err := s.Check(); err == nil || err.(*SpecError).Field != "Image" {
		t.Errorf("Check() = %v; want the image's error first", err)
	}
	s.Image = "i"
	if err := s.Check(); err == nil || err.(*SpecError).Field != "CPU" {
		t.Errorf("Check() = %v; want the CPU's error next", err)
	}
}

func TestCollectCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*CollectSpec)
		field string
	}{
		{"valid", func(*CollectSpec) {}, ""},
		{"namespace", func(s *CollectSpec) { s.Namespace = "ns" }, ""},
		{"no shards", func(s *CollectSpec) { s.Shards = -1 }, "Shards"},
		{"no claim", func(s *CollectSpec) { s.RecordsClaim = "" }, "RecordsClaim"},
		{"claim", func(s *CollectSpec) { s.RecordsClaim = "a_b" }, "RecordsClaim"},
		{"image", func(s *CollectSpec) { s.Image = "" }, "Image"},
		{"name", func(s *CollectSpec) { s.Name = "-x" }, "Name"},
		{"namespace", func(s *CollectSpec) { s.Namespace = "a.b" }, "Namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validCollect()
			tc.edit(&s)
			checkErr(t, "Check", s.Check(), tc.field)
			_, err := Collect(s)
			checkErr(t, "Collect", err, tc.field)
		})
	}
}

// flagName is a command-line flag's name in a message.
var flagName = regexp.MustCompile(`(^|[\s"(])--[a-z]`)

// checkErr checks that err is nil for field "", else a *SpecError of
// field whose message names no flag.
func checkErr(t *testing.T, call string, err error, field string) {
	t.Helper()
	var se *SpecError
	switch {
	case field == "" && err != nil:
		t.Errorf("%s = %v; want nil", call, err)
	case field == "":
	case !errors.As(err, &se):
		t.Errorf("%s = %v; want a *SpecError of %s", call, err, field)
	case se.Field != field:
		t.Errorf("%s = %v, field %s; want field %s", call, err, se.Field, field)
	case flagName.MatchString(err.Error()):
		t.Errorf("%s = %q: names a flag", call, err)
	case se.Unwrap() == nil || !strings.HasSuffix(err.Error(), se.Err.Error()):
		t.Errorf("%s = %q: want the field, value and %q", call, err, se.Err)
	}
}

func TestSpecErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  *SpecError
		want string
	}{
		{&SpecError{Field: "CPU", Value: "2x", Err: errors.New("want a CPU quantity")}, `CPU request "2x": want a CPU quantity`},
		{&SpecError{Field: "Port", Value: 0, Err: errors.New("want 1 to 65535")}, `rendezvous port 0: want 1 to 65535`},
		{&SpecError{Field: "Other", Err: errors.New("bad")}, `Other: bad`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q; want %q", tc.err, got, tc.want)
		}
	}
}

// The paths the CLI puts in the pods' arguments are those the manifests
// mount.
func TestPaths(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Rendezvous("b", 7077), "b-0.b:7077"},
		{ShardRecords(ShardIndexRef), "/records/shard-$(SHARD_INDEX).records.jsonl"},
		{ShardRecords("3"), "/records/shard-3.records.jsonl"},
		{WorkloadPath("p.jsonl"), "/workload/p.jsonl"},
		{MergedPath, "/records/merged.json"},
	} {
		if tc.got != tc.want {
			t.Errorf("path %q; want %q", tc.got, tc.want)
		}
	}
}

// FuzzJob: any name, namespace, image, quantities and workload name give
// a *SpecError, or manifests that decode as YAML with the objects named as
// asked; never a panic.
func FuzzJob(f *testing.F) {
	f.Add("goodput-bench", "", "goodput:latest", "2", "1Gi", "p.jsonl", 4)
	f.Add("a", "ns", "img", "500m", "1.5Gi", "x", 1)
	f.Add("Bad", "a b", "", "", "", "", 0)
	f.Add("x\n- y", "ns:\n", "i\"", "1", "1", "a:b", 2)
	f.Fuzz(func(t *testing.T, name, ns, image, cpu, mem, file string, shards int) {
		s := JobSpec{Name: name, Namespace: ns, Shards: shards, Image: image, CPU: cpu, Memory: mem, Port: 1, Spread: SpreadPreferred,
			Workload: &File{Name: file, Data: []byte(image)}, Args: []string{name, image}}
		docs, err := Job(s)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Job error %v: want a *SpecError", err)
			}
			return
		}
		ds := decode(t, docs)
		if len(ds) != 3 {
			t.Fatalf("%d documents; want 3", len(ds))
		}
		if dig(ds[2], "metadata", "name") != name || dig(ds[0], "data", file) != image {
			t.Fatalf("documents %v; want the Job named %q, the file %q", ds, name, file)
		}
	})
}
