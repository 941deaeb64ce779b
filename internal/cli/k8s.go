package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/k8s"
	"github.com/goodput/goodput/internal/run"
)

// A load too big for one machine runs as shards of one schedule on many:
// bench's --shard, --shards, --start-at and --rendezvous (parsed here), and
// "goodput k8s job", which writes the Kubernetes manifests that run the
// shards as an Indexed Job, one pod per shard, and "goodput k8s collect",
// the Job that merges their records. See docs/scale-out.md.

// jobIndexEnv is where a Kubernetes Indexed Job gives each pod its index.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

// parseStartAt parses --start-at (run.ParseStartAt), naming the flag.
func parseStartAt(s string) (time.Time, error) {
	t, err := run.ParseStartAt(s)
	if err != nil {
		return time.Time{}, usagef("--start-at %q: %v", s, err)
	}
	return t, nil
}

// shardFlags checks --shard, --shards, --start-at and --rendezvous and
// returns the run's shard (nil: a whole run) and its start (zero: once
// ready).
func (l *loadFlags) shardFlags(env Env) (*run.Shard, time.Time, error) {
	var sh *run.Shard
	switch {
	case l.Shard != "" && l.Shards != 0:
		return nil, time.Time{}, usagef("--shard %s and --shards %d: give one (--shards takes the index from %s)", l.Shard, l.Shards, jobIndexEnv)
	case l.Shard != "":
		i, n, err := run.ParseShard(l.Shard)
		if err != nil {
			return nil, time.Time{}, usagef("--shard %q: %v", l.Shard, err)
		}
		sh = &run.Shard{Index: i, Count: n}
	case l.Shards != 0:
		if l.Shards < 1 || l.Shards > run.MaxShards {
			return nil, time.Time{}, usagef("--shards %d: want 1 to %d", l.Shards, run.MaxShards)
		}
		v := ""
		if env.Getenv != nil {
			v = strings.TrimSpace(env.Getenv(jobIndexEnv))
		}
		if v == "" {
			return nil, time.Time{}, usagef("--shards %d takes this shard's index from %s (a Kubernetes Indexed Job sets it), which is not set: give --shard I/%d", l.Shards, jobIndexEnv, l.Shards)
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= l.Shards {
			return nil, time.Time{}, usagef("--shards %d: %s=%q: want an index from 0 to %d", l.Shards, jobIndexEnv, v, l.Shards-1)
		}
		sh = &run.Shard{Index: i, Count: l.Shards}
	}
	var at time.Time
	if l.StartAt != "" {
		var err error
		if at, err = parseStartAt(l.StartAt); err != nil {
			return nil, time.Time{}, err
		}
		if err := run.CheckStartAt(at, env.Now()); err != nil {
			return nil, time.Time{}, usagef("--start-at %w", err)
		}
	}
	if l.Rendezvous != "" {
		switch {
		case sh == nil:
			return nil, time.Time{}, usagef("--rendezvous %s agrees the start between shards: give --shard I/N or --shards N", l.Rendezvous)
		case !at.IsZero():
			return nil, time.Time{}, usagef("--rendezvous sets the start: give it or --start-at, not both")
		}
		sh.Rendezvous = l.Rendezvous
	}
	return sh, at, nil
}

// K8sJobOptions is everything "goodput k8s job" needs.
type K8sJobOptions struct {
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
	// Bench are bench's flags (after --), as the pods run them.
	Bench []string
}

// K8sCollectOptions is everything "goodput k8s collect" needs.
type K8sCollectOptions struct {
	Name, Namespace, Image, RecordsClaim string
	Shards                               int
	// Report are report's flags (after --).
	Report []string
}

func newK8sCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Write Kubernetes manifests that run one load as shards on many machines",
		Long:  helpText("k8s"),
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newK8sJobCmd(env), newK8sCollectCmd(env))
	return cmd
}

func newK8sJobCmd(env Env) *cobra.Command {
	var o K8sJobOptions
	cmd := &cobra.Command{
		Use:     "job --shards N --base-url URL [flags] [-- BENCH FLAGS...]",
		Short:   "Write an Indexed Job that runs goodput bench as N shards of one schedule",
		Long:    helpText("k8s-job"),
		Example: helpText("k8s-job.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usagef("unexpected argument %q: bench's flags go after --", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Bench = args
			return writeK8sJob(env, &o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Name, "name", "goodput-bench", "name of the Job, its Service and pods")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace of the objects (default: kubectl's)")
	fs.IntVar(&o.Shards, "shards", 0, "pods, one shard of the schedule each")
	fs.StringVar(&o.BaseURL, "base-url", "", "the server's root URL as the pods reach it")
	fs.StringVar(&o.APIKeySecret, "api-key-secret", "", "NAME/KEY of the Secret holding the API key (read into the pods' environment, never written in the manifest)")
	fs.StringVar(&o.Image, "image", "goodput:latest", "goodput's image (build it with the repository's Dockerfile)")
	fs.StringVar(&o.CPU, "cpu", "2", "CPU each pod requests, and is limited to")
	fs.StringVar(&o.Memory, "memory", "1Gi", "memory each pod requests, and is limited to")
	fs.StringVar(&o.StartAt, "start-at", "", "a fixed start (RFC 3339) instead of the rendezvous; the manifest goes stale once it passes")
	fs.IntVar(&o.Port, "port", 7077, "port of pod 0's rendezvous")
	fs.StringVar(&o.RecordsClaim, "records-claim", "", "a ReadWriteMany PersistentVolumeClaim for the records (default: each pod's log)")
	fs.StringVar(&o.Spread, "spread", "preferred", "spreading the pods over nodes: preferred, or required (one pod a node; pods wait for a free node)")
	return cmd
}

func newK8sCollectCmd(env Env) *cobra.Command {
	var o K8sCollectOptions
	cmd := &cobra.Command{
		Use:   "collect --shards N --records-claim CLAIM [flags] [-- REPORT FLAGS...]",
		Short: "Write a Job that merges the shards' records with goodput report",
		Long:  helpText("k8s-collect"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usagef("unexpected argument %q: report's flags go after --", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Report = args
			return writeK8sCollect(env, &o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Name, "name", "goodput-bench", "name of the shards' Job (the collector is NAME-report)")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace of the Job (default: kubectl's)")
	fs.IntVar(&o.Shards, "shards", 0, "the shards' count")
	fs.StringVar(&o.Image, "image", "goodput:latest", "goodput's image")
	fs.StringVar(&o.RecordsClaim, "records-claim", "", "the claim the shards wrote their records to")
	return cmd
}

// writeK8sJob checks the options, bench's flags with them, and writes the
// shards' manifests to env.Stdout.
func writeK8sJob(env Env, o *K8sJobOptions) error {
	switch {
	case o.Shards < 1 || o.Shards > run.MaxShards:
		return usagef("--shards %d: want 1 to %d pods", o.Shards, run.MaxShards)
	case o.BaseURL == "":
		return usagef("--base-url: give the server's root URL as the pods reach it (the embedded simulator runs in no pod)")
	case !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://"):
		return usagef("--base-url %q: want an http(s) URL", o.BaseURL)
	}
	spec := k8s.JobSpec{Name: o.Name, Namespace: o.Namespace, Shards: o.Shards, Image: o.Image, CPU: o.CPU, Memory: o.Memory,
		Port: o.Port, Spread: k8s.Spread(o.Spread), RecordsClaim: o.RecordsClaim}
	// The objects' own fields first, so that a bad one fails before
	// bench's flags are parsed and the dataset read.
	if err := spec.Check(); err != nil {
		return k8sFlagError(err, o.APIKeySecret, "")
	}
	if o.StartAt != "" {
		at, err := parseStartAt(o.StartAt)
		if err != nil {
			return err
		}
		if err := run.CheckStartAt(at, env.Now()); err != nil {
			return usagef("--start-at %w", err)
		}
	}
	// Bench's flags, checked as bench checks them, so a typo fails here
	// rather than in N pods.
	bo := &BenchOptions{}
	bc := benchCommand(env, bo)
	if err := bc.ParseFlags(o.Bench); err != nil {
		return usagef("bench flag after --: %v", err)
	}
	if rest := bc.Flags().Args(); len(rest) > 0 && len(bo.out.Goodput) == 0 {
		return usagef("after --: unexpected argument %q (bench takes flags only)", rest[0])
	}
	for _, f := range k8s.BenchOwned {
		if bc.Flags().Changed(f) {
			return usagef("after --: --%s is the Job's to set (give goodput k8s job --base-url, --shards, --start-at, --records-claim)", f)
		}
	}
	if tok := bo.work.o.Tokenizer; tok != "" && !strings.HasPrefix(tok, "tiktoken:") {
		fmt.Fprintf(env.Stderr, "goodput: --tokenizer %s is read in the pods: it must be at that path in the image or a volume\n", tok)
	}
	path := bo.work.o.DatasetPath
	pods := k8s.BenchRun{Name: o.Name, Port: o.Port, Shards: o.Shards, BaseURL: o.BaseURL, StartAt: o.StartAt,
		RecordsClaim: o.RecordsClaim, Quiet: bo.out.Quiet, Bench: o.Bench}
	if path != "" {
		b, err := os.ReadFile(resolve(env, path))
		if err != nil {
			return usagef("--dataset-path %s: %v (the file goes into a ConfigMap)", path, err)
		}
		spec.Workload = &k8s.File{Name: filepath.Base(path), Data: b}
		pods.Dataset = k8s.WorkloadPath(spec.Workload.Name)
	}
	if o.APIKeySecret != "" {
		// Without a '/' the key is empty, which the Job refuses.
		name, key, _ := strings.Cut(o.APIKeySecret, "/")
		spec.APIKey = &k8s.SecretKey{Name: name, Key: key}
		spec.APIKeyEnv = bo.target.keyEnv()
	}
	spec.Args = k8s.BenchArgs(pods)
	docs, err := k8s.Job(spec)
	if err != nil {
		return k8sFlagError(err, o.APIKeySecret, path)
	}
	head := k8s.JobHead(spec, k8s.Schedule{Target: o.BaseURL, StartAt: o.StartAt, Grace: run.StartAtGrace})
	return k8s.Write(env.Stdout, head, docs)
}

// writeK8sCollect writes the Job that merges the shards' records.
func writeK8sCollect(env Env, o *K8sCollectOptions) error {
	if o.Shards < 1 || o.Shards > run.MaxShards {
		return usagef("--shards %d: want 1 to %d", o.Shards, run.MaxShards)
	}
	spec := k8s.CollectSpec{Name: o.Name, Namespace: o.Namespace, Shards: o.Shards, Image: o.Image, RecordsClaim: o.RecordsClaim}
	// The Job's own fields first, so that a bad one fails before report's
	// flags are parsed.
	if err := spec.Check(); err != nil {
		return k8sFlagError(err, "", "")
	}
	rc := newReportCmd(env)
	if err := rc.ParseFlags(o.Report); err != nil {
		return usagef("report flag after --: %v", err)
	}
	if rest := rc.Flags().Args(); len(rest) > 0 {
		return usagef("after --: unexpected argument %q (the Job names the shards' files)", rest[0])
	}
	if rc.Flags().Changed("json") {
		return usagef("after --: --json is the Job's to set (%s)", k8s.MergedPath)
	}
	spec.Args = k8s.CollectArgs(o.Shards, o.Report)
	docs, err := k8s.Collect(spec)
	if err != nil {
		return k8sFlagError(err, "", "")
	}
	return k8s.Write(env.Stdout, k8s.CollectHead(spec), docs)
}

// k8sFieldFlags are the flags of k8s.JobSpec's and k8s.CollectSpec's
// fields, by Go name, where the error reads as the flag, its value and the
// problem.
var k8sFieldFlags = map[string]string{
	"Name":         "--name",
	"Namespace":    "--namespace",
	"Shards":       "--shards",
	"Image":        "--image",
	"CPU":          "--cpu",
	"Memory":       "--memory",
	"Port":         "--port",
	"Spread":       "--spread",
	"RecordsClaim": "--records-claim",
}

// k8sFlagError makes err, a *k8s.SpecError from a spec the k8s commands'
// flags filled, a usage error whose one line names the flag at fault:
// secret is --api-key-secret as given, which the Secret's name and key
// came from, and dataset --dataset-path as given, which the workload file
// was read from (its name is the path's last element). Any other error is
// a usage error as it reads.
func k8sFlagError(err error, secret, dataset string) error {
	var se *k8s.SpecError
	if !errors.As(err, &se) {
		return usageError{err}
	}
	switch se.Field {
	case "APIKey.Name", "APIKey.Key":
		return usagef("--api-key-secret %q: want NAME/KEY, the Secret's name and the key in it holding the API key", secret)
	case "APIKeyEnv":
		return usagef("--api-key-secret needs bench's --api-key-env to name the variable the key goes in")
	case "Workload":
		return usagef("--dataset-path %s: %w", dataset, se.Err)
	case "RecordsClaim":
		if se.Value == "" {
			return usagef("--records-claim: give the claim the shards wrote their records to (without one, read them from the pods' logs: see docs/scale-out.md)")
		}
	}
	if flag, ok := k8sFieldFlags[se.Field]; ok {
		return usagef("%s %s: %w", flag, se.ValueText(), se.Err)
	}
	return usageError{err}
}
