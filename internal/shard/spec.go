package shard

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/k8s"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/workload"
)

// JobIndexEnv is where a Kubernetes Indexed Job gives each pod its index.
const JobIndexEnv = "JOB_COMPLETION_INDEX"

// Spec is a run split over machines as a user gives it: Shard I/N,
// or Shards N with the index from JobIndexEnv; a fixed StartAt (RFC 3339)
// or a Rendezvous address agreeing the start between the shards.
type Spec struct {
	Shard      string
	Shards     int
	StartAt    string
	Rendezvous string
}

// Build is the run's shard (nil: a whole run) and start (zero: once
// ready); index is JobIndexEnv's value, now the clock. Errors are
// *setting.Error of Spec's fields.
func (s Spec) Build(index string, now time.Time) (*Shard, time.Time, error) {
	var sh *Shard
	switch {
	case s.Shard != "" && s.Shards != 0:
		return nil, time.Time{}, setting.Errorf("", "", "%v %s and %v %d: give one (%[3]v takes the index from %[5]s)",
			setting.Name("Shard"), s.Shard, setting.Name("Shards"), s.Shards, JobIndexEnv)
	case s.Shard != "":
		i, n, err := Parse(s.Shard)
		if err != nil {
			return nil, time.Time{}, setting.Errorf("Shard", strconv.Quote(s.Shard), "%v", err)
		}
		sh = &Shard{Index: i, Count: n}
	case s.Shards != 0:
		if s.Shards < 1 || s.Shards > MaxCount {
			return nil, time.Time{}, setting.Errorf("Shards", strconv.Itoa(s.Shards), "want 1 to %d", MaxCount)
		}
		index = strings.TrimSpace(index)
		if index == "" {
			return nil, time.Time{}, setting.Errorf("", "", "%v %d takes this shard's index from %s (a Kubernetes Indexed Job sets it), which is not set: give %v I/%[2]d",
				setting.Name("Shards"), s.Shards, JobIndexEnv, setting.Name("Shard"))
		}
		i, err := strconv.Atoi(index)
		if err != nil || i < 0 || i >= s.Shards {
			return nil, time.Time{}, setting.Errorf("Shards", strconv.Itoa(s.Shards), "%s=%q: want an index from 0 to %d", JobIndexEnv, index, s.Shards-1)
		}
		sh = &Shard{Index: i, Count: s.Shards}
	}
	at, err := startAt(s.StartAt, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	if s.Rendezvous != "" {
		switch {
		case sh == nil:
			return nil, time.Time{}, setting.Errorf("", "", "%v %s agrees the start between shards: give %v I/N or %v N",
				setting.Name("Rendezvous"), s.Rendezvous, setting.Name("Shard"), setting.Name("Shards"))
		case !at.IsZero():
			return nil, time.Time{}, setting.Errorf("Rendezvous", "", "sets the start: give it or %v, not both", setting.Name("StartAt"))
		}
		sh.Rendezvous = s.Rendezvous
	}
	return sh, at, nil
}

// startAt parses and checks a fixed start ("" none), as field StartAt.
func startAt(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	at, err := ParseStartAt(s)
	if err != nil {
		return time.Time{}, setting.Errorf("StartAt", strconv.Quote(s), "%v", err)
	}
	if err := CheckStartAt(at, now); err != nil {
		return time.Time{}, setting.Errorf("", "", "%v %v", setting.Name("StartAt"), err)
	}
	return at, nil
}

// Job is "goodput k8s job" as a user gives it: the Indexed Job that
// runs bench as Shards shards of one schedule against BaseURL.
type Job struct {
	// Name names the Job (and its Service, ConfigMap and pods); Namespace
	// is theirs ("" kubectl's current).
	Name, Namespace string
	// Shards is the pod count, one shard each; BaseURL the target as the
	// pods reach it.
	Shards  int
	BaseURL string
	// APIKeySecret is NAME/KEY of the Secret holding the API key ("" none).
	APIKeySecret string
	// Image is goodput's image; CPU and Memory each pod's requests (and
	// equal limits).
	Image, CPU, Memory string
	// StartAt is a fixed start instead of the rendezvous ("" rendezvous);
	// Port is the rendezvous' port.
	StartAt string
	Port    int
	// RecordsClaim is a PersistentVolumeClaim (ReadWriteMany) the shards
	// write their records to ("" their standard output, for kubectl logs).
	RecordsClaim string
	// Spread is how hard the pods spread over nodes: preferred or required.
	Spread string
	// Bench is what the pods run of bench's own settings.
	Bench JobBench
}

// JobBench is bench as the shard pods run it: Args, bench's flags as the
// user gave them; Workload, the options they fill (its dataset goes into
// a ConfigMap; a pointer, so that an error's field path
// Bench.Workload.DatasetPath leads to the field bench's flag fills);
// APIKeyEnv, the variable the API key goes in; Quiet, Args hold --quiet.
// Given says which of bench's flags Args hold; Rest are Args' words no
// flag took, which only SLO words may be (SLO: bench's goodput given).
type JobBench struct {
	Args      []string
	Workload  *workload.Options
	APIKeyEnv string
	Quiet     bool
	Given     func(flag string) bool
	Rest      []string
	SLO       bool
}

// check refuses in bench's arguments a word bench takes as no setting,
// and a flag the Job sets itself (k8s.BenchOwned).
func (b JobBench) check() error {
	if len(b.Rest) > 0 && !b.SLO {
		return setting.Errorf("", "", "after --: unexpected argument %q (bench takes flags only)", b.Rest[0])
	}
	for _, f := range k8s.BenchOwned {
		if b.Given != nil && b.Given(f) {
			return setting.Errorf("", "", "after --: --%s is the Job's to set (give goodput k8s job %v, %v, %v, %v)", f,
				setting.Name("BaseURL"), setting.Name("Shards"), setting.Name("StartAt"), setting.Name("RecordsClaim"))
		}
	}
	return nil
}

// Check checks the Job's own settings, before bench's are read: errors
// are *setting.Error of Job's fields.
func (j *Job) Check(now time.Time) (k8s.JobSpec, error) {
	switch {
	case j.Shards < 1 || j.Shards > MaxCount:
		return k8s.JobSpec{}, setting.Errorf("Shards", strconv.Itoa(j.Shards), "want 1 to %d pods", MaxCount)
	case j.BaseURL == "":
		return k8s.JobSpec{}, setting.Errorf("BaseURL", "", "give the server's root URL as the pods reach it (the embedded simulator runs in no pod)")
	case !strings.HasPrefix(j.BaseURL, "http://") && !strings.HasPrefix(j.BaseURL, "https://"):
		return k8s.JobSpec{}, setting.Errorf("BaseURL", strconv.Quote(j.BaseURL), "want an http(s) URL")
	}
	spec := k8s.JobSpec{Name: j.Name, Namespace: j.Namespace, Shards: j.Shards, Image: j.Image, CPU: j.CPU, Memory: j.Memory,
		Port: j.Port, Spread: k8s.Spread(j.Spread), RecordsClaim: j.RecordsClaim}
	if err := spec.Check(); err != nil {
		return spec, j.specError(err)
	}
	_, err := startAt(j.StartAt, now)
	return spec, err
}

// Manifests checks the Job with bench's settings and returns the head
// comment and the objects; read reads the dataset. Errors about the
// dataset are of field Bench.Workload.DatasetPath.
func (j *Job) Manifests(now time.Time, read func(path string) ([]byte, error)) (string, []k8s.Manifest, error) {
	spec, err := j.Check(now)
	if err == nil {
		err = j.Bench.check()
	}
	if err != nil {
		return "", nil, err
	}
	b := j.Bench
	pods := k8s.BenchRun{Name: j.Name, Port: j.Port, Shards: j.Shards, BaseURL: j.BaseURL, StartAt: j.StartAt,
		RecordsClaim: j.RecordsClaim, Quiet: b.Quiet, Bench: b.Args}
	if b.Workload != nil && b.Workload.DatasetPath != "" {
		path := b.Workload.DatasetPath
		data, err := read(path)
		if err != nil {
			return "", nil, setting.Errorf("Bench.Workload.DatasetPath", path, "%v (the file goes into a ConfigMap)", err)
		}
		spec.Workload = &k8s.File{Name: filepath.Base(path), Data: data}
		pods.Dataset = k8s.WorkloadPath(spec.Workload.Name)
	}
	if j.APIKeySecret != "" {
		// Without a '/' the key is empty, which the Job refuses.
		name, key, _ := strings.Cut(j.APIKeySecret, "/")
		spec.APIKey = &k8s.SecretKey{Name: name, Key: key}
		spec.APIKeyEnv = b.APIKeyEnv
	}
	spec.Args = k8s.BenchArgs(pods)
	docs, err := k8s.Job(spec)
	if err != nil {
		return "", nil, j.specError(err)
	}
	return k8s.JobHead(spec, k8s.Schedule{Target: j.BaseURL, StartAt: j.StartAt, Grace: StartAtGrace}), docs, nil
}

// specError is a *k8s.SpecError as a *setting.Error of the field of j
// that filled the spec's field.
func (j *Job) specError(err error) error {
	var se *k8s.SpecError
	if !errors.As(err, &se) {
		return err
	}
	switch se.Field {
	case "APIKey.Name", "APIKey.Key":
		return setting.Errorf("APIKeySecret", strconv.Quote(j.APIKeySecret), "want NAME/KEY, the Secret's name and the key in it holding the API key")
	case "APIKeyEnv":
		return setting.Errorf("", "", "%v needs bench's %v to name the variable the key goes in",
			setting.Name("APIKeySecret"), setting.Name("Bench.APIKeyEnv"))
	case "Workload":
		return setting.Errorf("Bench.Workload.DatasetPath", j.Bench.Workload.DatasetPath, "%v", se.Err)
	}
	return k8sFieldError(se)
}

// k8sFieldError is a spec field's error as the same field of the settings
// (Job's and Collect's fields are named as the spec's).
func k8sFieldError(se *k8s.SpecError) error {
	if se.Field == "RecordsClaim" && se.Value == "" {
		return setting.Errorf("RecordsClaim", "", "give the claim the shards wrote their records to (without one, read them from the pods' logs: see docs/scale-out.md)")
	}
	return setting.Errorf(se.Field, se.ValueText(), "%v", se.Err)
}

// Collect is "goodput k8s collect" as a user gives it: the Job that
// merges the shards' records with report's flags Report; ReportGiven says
// which flags Report holds, ReportRest its words no flag took.
type Collect struct {
	Name, Namespace, Image, RecordsClaim string
	Shards                               int
	Report, ReportRest                   []string
	ReportGiven                          func(flag string) bool
}

// Check checks the collector's own settings, before report's are read.
func (c *Collect) Check() (k8s.CollectSpec, error) {
	spec := k8s.CollectSpec{Name: c.Name, Namespace: c.Namespace, Shards: c.Shards, Image: c.Image, RecordsClaim: c.RecordsClaim}
	if c.Shards < 1 || c.Shards > MaxCount {
		return spec, setting.Errorf("Shards", strconv.Itoa(c.Shards), "want 1 to %d", MaxCount)
	}
	if err := spec.Check(); err != nil {
		var se *k8s.SpecError
		if errors.As(err, &se) {
			return spec, k8sFieldError(se)
		}
		return spec, err
	}
	return spec, nil
}

// Manifests is the collector's head comment and objects.
func (c *Collect) Manifests() (string, []k8s.Manifest, error) {
	spec, err := c.Check()
	switch {
	case err != nil:
		return "", nil, err
	case len(c.ReportRest) > 0:
		return "", nil, setting.Errorf("", "", "after --: unexpected argument %q (the Job names the shards' files)", c.ReportRest[0])
	case c.ReportGiven != nil && c.ReportGiven("json"):
		return "", nil, setting.Errorf("", "", "after --: --json is the Job's to set (%s)", k8s.MergedPath)
	}
	spec.Args = k8s.CollectArgs(c.Shards, c.Report)
	docs, err := k8s.Collect(spec)
	if err != nil {
		return "", nil, fmt.Errorf("the collector: %w", err)
	}
	return k8s.CollectHead(spec), docs, nil
}
