package runspec

import (
	"errors"
	"os"
	"strings"

	"github.com/goodput/goodput/internal/jobgraph"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/workload"
)

// jobLoaders are the agent trace formats a dataset name selects, each
// read into job graphs by package jobgraph.
var jobLoaders = map[string]jobgraph.Loader{
	"weka":     jobgraph.LoadWeka,
	"tracelab": jobgraph.LoadTraceLab,
	"otel":     jobgraph.LoadOTel,
}

// IsJobDataset reports whether a dataset name is an agent trace's, whose
// jobs replay as request graphs (weka, tracelab, otel).
func IsJobDataset(name string) bool {
	_, ok := jobLoaders[strings.ToLower(name)]
	return ok
}

// jobs is the job-graph load of w's trace file: the session settings that
// fit jobs (Rate, Burstiness, MaxConcurrent, NumSessions) apply, the
// conversation ones are refused. A trace's own errors (a cycle, an
// unknown dependency) come back as the loader's one-line
// *setting.FileError naming file:line.
func (s SessionSpec) jobs(w workload.Options) (*run.SessionLoad, error) {
	name := strings.ToLower(w.DatasetName)
	switch {
	case w.DatasetPath == "":
		return nil, setting.Errorf("", "", "%v %s needs %v (the trace file)", setting.Name("Workload.DatasetName"), name, setting.Name("Workload.DatasetPath"))
	case s.Goodput != "":
		return nil, setting.Errorf("Goodput", s.Goodput, "judges conversations; agent jobs have their own results")
	case s.Rate < 0 || s.MaxConcurrent < 0 || s.NumSessions < 0:
		return nil, setting.Errorf("", "", "%v, %v and %v: want ≥ 0", setting.Name("Rate"), setting.Name("MaxConcurrent"), setting.Name("NumSessions"))
	case !(s.Burstiness > 0):
		return nil, setting.Errorf("Burstiness", "", "want > 0")
	}
	f, err := os.Open(w.DatasetPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	jobs, err := jobLoaders[name](w.DatasetPath, f)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, &setting.FileError{File: w.DatasetPath, Err: errNoJobs}
	}
	return &run.SessionLoad{Jobs: jobs, JobsName: name, NumSessions: s.NumSessions, Rate: s.Rate, Burstiness: s.Burstiness,
		MaxConcurrent: s.MaxConcurrent}, nil
}

// errNoJobs is a trace file with no model request in it.
var errNoJobs = errors.New("no agent job with a model request")
