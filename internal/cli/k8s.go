package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/goodput/goodput/internal/run"
)

// A load too big for one machine runs as shards of one schedule on many:
// bench's --shard, --shards, --start-at and --rendezvous (parsed here), and
// "goodput k8s job", which writes the Kubernetes manifests that run the
// shards as an Indexed Job, one pod per shard, and "goodput k8s collect",
// the Job that merges their records. See docs/scale-out.md.

// jobIndexEnv is where a Kubernetes Indexed Job gives each pod its index.
const jobIndexEnv = "JOB_COMPLETION_INDEX"

// parseShard parses --shard's I/N: shard I, counted from 0, of N ≥ 1.
func parseShard(s string) (index, count int, err error) {
	bad := func(why string) (int, int, error) {
		return 0, 0, usagef("--shard %q: %s", s, why)
	}
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return bad("want I/N, shard I (from 0) of N, e.g. 0/4")
	}
	index, err1 := strconv.Atoi(strings.TrimSpace(a))
	count, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case err1 != nil || err2 != nil:
		return bad("want I/N with whole numbers, e.g. 0/4")
	case count < 1 || count > maxShardCount:
		return bad(fmt.Sprintf("want 1 to %d shards", maxShardCount))
	case index < 0 || index >= count:
		return bad(fmt.Sprintf("the index counts from 0: want 0 to %d", count-1))
	}
	return index, count, nil
}

// maxShardCount is run's bound on shards.
const maxShardCount = 10000

// parseStartAt parses --start-at: an RFC 3339 instant, fractional seconds
// allowed, with its zone (Z or ±hh:mm).
func parseStartAt(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, usagef("--start-at %q: want an RFC 3339 instant with its zone, e.g. 2026-12-01T10:00:00Z", s)
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
		i, n, err := parseShard(l.Shard)
		if err != nil {
			return nil, time.Time{}, err
		}
		sh = &run.Shard{Index: i, Count: n}
	case l.Shards != 0:
		if l.Shards < 1 || l.Shards > maxShardCount {
			return nil, time.Time{}, usagef("--shards %d: want 1 to %d", l.Shards, maxShardCount)
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
		Long: `Write Kubernetes manifests for a load too big for one machine: "k8s job"
runs goodput bench as an Indexed Job, one pod per shard of one schedule, the
pods agreeing their start at a rendezvous; "k8s collect" merges the shards'
records with goodput report. Pipe the output to kubectl apply -f -. See
docs/scale-out.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newK8sJobCmd(env), newK8sCollectCmd(env))
	return cmd
}

func newK8sJobCmd(env Env) *cobra.Command {
	var o K8sJobOptions
	cmd := &cobra.Command{
		Use:   "job --shards N --base-url URL [flags] [-- BENCH FLAGS...]",
		Short: "Write an Indexed Job that runs goodput bench as N shards of one schedule",
		Long: `Write the manifests (a headless Service for the rendezvous, an Indexed Job
of N pods spread over nodes, a ConfigMap for a --dataset-path file) that run
"goodput bench --shards N" against --base-url: pod I sends shard I's share of
one schedule, the start set by pod 0 once every pod has checked in. Bench's
own flags go after --. The API key comes from a Secret (--api-key-secret),
never from the manifest. Records go to each pod's log (kubectl logs), or to
a ReadWriteMany claim (--records-claim) for "goodput k8s collect".`,
		Example: `  goodput k8s job --shards 4 --base-url http://vllm.serving:8000 --api-key-secret llm/key -- \
      --backend openai-chat --request-rate 400 --num-prompts 40000 | kubectl apply -f -`,
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
		Long: `Write a Job that runs goodput report on every shard's records file on the
claim "k8s job --records-claim" wrote them to, and saves the merged result
JSON there (merged.json); its log is the merged report. Apply it once the
shards' Job is complete. Report's own flags go after --.`,
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

// Where the pods keep what they read and write.
const (
	workloadDir = "/workload"
	recordsDir  = "/records"
	scratchDir  = "/tmp"
	// nonRootUID is the distroless image's "nonroot" user.
	nonRootUID = 65532
	// maxConfigMap is what a ConfigMap holds, less room for its metadata.
	maxConfigMap = 1000 * 1024
)

// dnsLabel is a Kubernetes object name that is also a DNS label; dataKey
// a key of a Secret's or ConfigMap's data.
var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dataKey  = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// checkName checks a --name (its pods are NAME-INDEX, a DNS label too) and
// --namespace.
func checkName(name, namespace string, shards int) error {
	host := name + "-" + strconv.Itoa(max(shards-1, 0))
	switch {
	case !dnsLabel.MatchString(name) || len(host) > 63:
		return usagef("--name %q: want lowercase letters, digits and '-', starting and ending with a letter or digit, short enough that %q is at most 63 characters", name, host)
	case namespace != "" && (!dnsLabel.MatchString(namespace) || len(namespace) > 63):
		return usagef("--namespace %q: want a DNS label (lowercase letters, digits, '-')", namespace)
	}
	return nil
}

// secretRef parses --api-key-secret NAME/KEY.
func secretRef(s string) (name, key string, err error) {
	name, key, ok := strings.Cut(s, "/")
	if !ok || !dnsLabel.MatchString(name) || len(name) > 253 || !dataKey.MatchString(key) {
		return "", "", usagef("--api-key-secret %q: want NAME/KEY, the Secret's name and the key in it holding the API key", s)
	}
	return name, key, nil
}

// quantity loosely checks a resource quantity (2, 500m, 1Gi, 1.5).
var quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)

// benchOwned are bench's flags the Job sets itself.
var benchOwned = []string{"base-url", "host", "port", "shard", "shards", "start-at", "rendezvous", "records"}

// manifest is one Kubernetes object, its fields in the order kubectl
// writes them.
type manifest struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data,omitempty"`
	Spec       any               `yaml:"spec,omitempty"`
}

type objectMeta struct {
	Name      string            `yaml:"name,omitempty"`
	Namespace string            `yaml:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

type jobSpec struct {
	CompletionMode string      `yaml:"completionMode,omitempty"`
	Completions    int         `yaml:"completions"`
	Parallelism    int         `yaml:"parallelism"`
	BackoffLimit   int         `yaml:"backoffLimit"`
	Template       podTemplate `yaml:"template"`
}

type podTemplate struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy   string           `yaml:"restartPolicy"`
	Subdomain       string           `yaml:"subdomain,omitempty"`
	Affinity        map[string]any   `yaml:"affinity,omitempty"`
	SecurityContext map[string]any   `yaml:"securityContext"`
	Containers      []container      `yaml:"containers"`
	Volumes         []map[string]any `yaml:"volumes,omitempty"`
}

type container struct {
	Name            string           `yaml:"name"`
	Image           string           `yaml:"image"`
	ImagePullPolicy string           `yaml:"imagePullPolicy"`
	Args            []string         `yaml:"args"`
	WorkingDir      string           `yaml:"workingDir,omitempty"`
	Env             []map[string]any `yaml:"env,omitempty"`
	Ports           []map[string]any `yaml:"ports,omitempty"`
	Resources       map[string]any   `yaml:"resources,omitempty"`
	SecurityContext map[string]any   `yaml:"securityContext"`
	VolumeMounts    []map[string]any `yaml:"volumeMounts,omitempty"`
}

// labels are the objects' labels; the pods are selected by the instance.
func labels(name, component string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "goodput", "app.kubernetes.io/instance": name, "app.kubernetes.io/component": component}
}

// hardened is a container's security context: no privilege, nothing
// written outside its volumes.
func hardened() map[string]any {
	return map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "capabilities": map[string]any{"drop": []string{"ALL"}}}
}

// podSecurity runs the pod as the image's non-root user.
func podSecurity() map[string]any {
	return map[string]any{"runAsNonRoot": true, "runAsUser": nonRootUID, "runAsGroup": nonRootUID, "fsGroup": nonRootUID,
		"seccompProfile": map[string]any{"type": "RuntimeDefault"}}
}

// writeK8sJob checks the options, bench's flags with them, and writes the
// shards' manifests to env.Stdout.
func writeK8sJob(env Env, o *K8sJobOptions) error {
	switch {
	case o.Shards < 1 || o.Shards > maxShardCount:
		return usagef("--shards %d: want 1 to %d pods", o.Shards, maxShardCount)
	case o.BaseURL == "":
		return usagef("--base-url: give the server's root URL as the pods reach it (the embedded simulator runs in no pod)")
	case !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://"):
		return usagef("--base-url %q: want an http(s) URL", o.BaseURL)
	case strings.TrimSpace(o.Image) == "" || strings.ContainsAny(o.Image, " \t\n"):
		return usagef("--image %q: want an image reference", o.Image)
	case !quantity.MatchString(o.CPU):
		return usagef("--cpu %q: want a CPU quantity, e.g. 2 or 500m", o.CPU)
	case !quantity.MatchString(o.Memory):
		return usagef("--memory %q: want a memory quantity, e.g. 1Gi", o.Memory)
	case o.Port < 1 || o.Port > 65535:
		return usagef("--port %d: want 1 to 65535", o.Port)
	case o.Spread != "preferred" && o.Spread != "required":
		return usagef("--spread %q: want preferred or required", o.Spread)
	case o.RecordsClaim != "" && !dnsLabel.MatchString(o.RecordsClaim):
		return usagef("--records-claim %q: want a PersistentVolumeClaim's name", o.RecordsClaim)
	}
	if err := checkName(o.Name, o.Namespace, o.Shards); err != nil {
		return err
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
	for _, f := range benchOwned {
		if bc.Flags().Changed(f) {
			return usagef("after --: --%s is the Job's to set (give goodput k8s job --base-url, --shards, --start-at, --records-claim)", f)
		}
	}
	if tok := bo.work.o.Tokenizer; tok != "" && !strings.HasPrefix(tok, "tiktoken:") {
		fmt.Fprintf(env.Stderr, "goodput: --tokenizer %s is read in the pods: it must be at that path in the image or a volume\n", tok)
	}
	args := []string{"bench", "--base-url", o.BaseURL, "--shards", strconv.Itoa(o.Shards)}
	if o.StartAt != "" {
		args = append(args, "--start-at", o.StartAt)
	} else {
		args = append(args, "--rendezvous", fmt.Sprintf("%s-0.%s:%d", o.Name, o.Name, o.Port))
	}
	var docs []manifest
	var mounts, volumes []map[string]any
	mounts = append(mounts, map[string]any{"name": "scratch", "mountPath": scratchDir})
	volumes = append(volumes, map[string]any{"name": "scratch", "emptyDir": map[string]any{}})
	bench := append([]string(nil), o.Bench...)
	if path := bo.work.o.DatasetPath; path != "" {
		cm, rewritten, err := datasetConfigMap(env, o, path, bench)
		if err != nil {
			return err
		}
		docs, bench = append(docs, cm), rewritten
		mounts = append(mounts, map[string]any{"name": "workload", "mountPath": workloadDir, "readOnly": true})
		volumes = append(volumes, map[string]any{"name": "workload", "configMap": map[string]any{"name": cm.Metadata.Name}})
	}
	var env0 []map[string]any
	if o.RecordsClaim != "" {
		env0 = append(env0, map[string]any{"name": "SHARD_INDEX", "valueFrom": map[string]any{"fieldRef": map[string]any{
			"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
		// $(SHARD_INDEX) is expanded by the kubelet from the pod's env.
		args = append(args, "--records", recordsDir+"/shard-$(SHARD_INDEX).records.jsonl")
		mounts = append(mounts, map[string]any{"name": "records", "mountPath": recordsDir})
		volumes = append(volumes, map[string]any{"name": "records", "persistentVolumeClaim": map[string]any{"claimName": o.RecordsClaim}})
	} else {
		// The records are the pod's output; the summary and notes that
		// share the log are skipped when read (--skip-bad-lines).
		args = append(args, "--records", "/dev/stdout", "--overwrite")
	}
	if !bo.out.Quiet {
		args = append(args, "--quiet")
	}
	args = append(args, bench...)
	if o.APIKeySecret != "" {
		name, key, err := secretRef(o.APIKeySecret)
		if err != nil {
			return err
		}
		if bo.target.keyEnv() == "" {
			return usagef("--api-key-secret needs bench's --api-key-env to name the variable the key goes in")
		}
		env0 = append(env0, map[string]any{"name": bo.target.keyEnv(), "valueFrom": map[string]any{
			"secretKeyRef": map[string]any{"name": name, "key": key}}})
	}
	term := map[string]any{
		"labelSelector": map[string]any{"matchLabels": map[string]string{"app.kubernetes.io/instance": o.Name}},
		"topologyKey":   "kubernetes.io/hostname",
	}
	anti := map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []map[string]any{{"weight": 100, "podAffinityTerm": term}}}
	if o.Spread == "required" {
		anti = map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []map[string]any{term}}
	}
	res := map[string]any{"cpu": o.CPU, "memory": o.Memory}
	pod := podSpec{
		RestartPolicy: "Never", Subdomain: o.Name, Affinity: map[string]any{"podAntiAffinity": anti}, SecurityContext: podSecurity(),
		Containers: []container{{
			Name: "bench", Image: o.Image, ImagePullPolicy: "IfNotPresent", Args: args, WorkingDir: scratchDir, Env: env0,
			Ports:     []map[string]any{{"name": "rendezvous", "containerPort": o.Port, "protocol": "TCP"}},
			Resources: map[string]any{"requests": res, "limits": res}, SecurityContext: hardened(), VolumeMounts: mounts,
		}},
		Volumes: volumes,
	}
	docs = append(docs, manifest{
		APIVersion: "v1", Kind: "Service", Metadata: objectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels(o.Name, "bench")},
		Spec: map[string]any{"clusterIP": "None", "publishNotReadyAddresses": true,
			"selector": map[string]string{"app.kubernetes.io/instance": o.Name},
			"ports":    []map[string]any{{"name": "rendezvous", "port": o.Port, "targetPort": o.Port, "protocol": "TCP"}}},
	}, manifest{
		APIVersion: "batch/v1", Kind: "Job", Metadata: objectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels(o.Name, "bench")},
		Spec: jobSpec{CompletionMode: "Indexed", Completions: o.Shards, Parallelism: o.Shards,
			// A retried shard could not rejoin the schedule: a failed pod
			// is reported by the merge, not run again.
			BackoffLimit: 0,
			Template:     podTemplate{Metadata: objectMeta{Labels: labels(o.Name, "bench")}, Spec: pod}},
	})
	return writeManifests(env.Stdout, k8sJobHead(o), docs)
}

// datasetConfigMap holds the --dataset-path file in a ConfigMap and returns
// bench's flags reading it from the pods' mount.
func datasetConfigMap(env Env, o *K8sJobOptions, path string, bench []string) (manifest, []string, error) {
	b, err := os.ReadFile(resolve(env, path))
	if err != nil {
		return manifest{}, nil, usagef("--dataset-path %s: %v (the file goes into a ConfigMap)", path, err)
	}
	if len(b) > maxConfigMap {
		return manifest{}, nil, usagef("--dataset-path %s: %d bytes; a ConfigMap holds about 1 MiB: put the file in an image or a volume and give its path in the pod", path, len(b))
	}
	if !utf8.Valid(b) {
		return manifest{}, nil, usagef("--dataset-path %s: not UTF-8 text, which a ConfigMap's data must be", path)
	}
	base := filepath.Base(path)
	if !dataKey.MatchString(base) {
		return manifest{}, nil, usagef("--dataset-path %s: a ConfigMap key allows letters, digits, '-', '_' and '.': rename the file", path)
	}
	in := workloadDir + "/" + base
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
	cm := manifest{APIVersion: "v1", Kind: "ConfigMap",
		Metadata: objectMeta{Name: o.Name + "-workload", Namespace: o.Namespace, Labels: labels(o.Name, "bench")},
		Data:     map[string]string{base: string(b)}}
	return cm, out, nil
}

// k8sJobHead is the comment the manifests open with: how to run them and
// collect the shards' records.
func k8sJobHead(o *K8sJobOptions) string {
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# goodput k8s job: %d shards of one schedule against %s.\n", o.Shards, o.BaseURL)
	if o.StartAt != "" {
		fmt.Fprintf(&b, "# The shards start at %s: apply before then (a start past by more than %s fails).\n", o.StartAt, run.StartAtGrace)
	} else {
		fmt.Fprintf(&b, "# Pod 0 sets the start once all %d pods have checked in at its rendezvous (%s-0.%s:%d).\n", o.Shards, o.Name, o.Name, o.Port)
	}
	fmt.Fprintf(&b, "#   kubectl%s apply -f THIS.yaml\n", ns)
	fmt.Fprintf(&b, "#   kubectl%s wait --for=condition=complete --timeout=24h job/%s\n", ns, o.Name)
	if o.RecordsClaim != "" {
		fmt.Fprintf(&b, "#   goodput k8s collect --name %s --shards %d --records-claim %s%s | kubectl%s apply -f -\n", o.Name, o.Shards, o.RecordsClaim, nsFlag(o.Namespace), ns)
		fmt.Fprintf(&b, "#   kubectl%s logs -f job/%s-report\n", ns, o.Name)
	} else {
		fmt.Fprintf(&b, "#   for i in $(seq 0 %d); do kubectl%s logs -l batch.kubernetes.io/job-name=%s,batch.kubernetes.io/job-completion-index=$i --tail=-1 > shard-$i.records.jsonl; done\n", o.Shards-1, ns, o.Name)
		fmt.Fprintf(&b, "#   goodput report --skip-bad-lines shard-*.records.jsonl\n")
	}
	return b.String()
}

func nsFlag(ns string) string {
	if ns == "" {
		return ""
	}
	return " --namespace " + ns
}

// writeK8sCollect writes the Job that merges the shards' records.
func writeK8sCollect(env Env, o *K8sCollectOptions) error {
	switch {
	case o.Shards < 1 || o.Shards > maxShardCount:
		return usagef("--shards %d: want 1 to %d", o.Shards, maxShardCount)
	case o.RecordsClaim == "":
		return usagef("--records-claim: give the claim the shards wrote their records to (without one, read them from the pods' logs: see docs/scale-out.md)")
	case !dnsLabel.MatchString(o.RecordsClaim):
		return usagef("--records-claim %q: want a PersistentVolumeClaim's name", o.RecordsClaim)
	case strings.TrimSpace(o.Image) == "" || strings.ContainsAny(o.Image, " \t\n"):
		return usagef("--image %q: want an image reference", o.Image)
	}
	if err := checkName(o.Name, o.Namespace, o.Shards); err != nil {
		return err
	}
	rc := newReportCmd(env)
	if err := rc.ParseFlags(o.Report); err != nil {
		return usagef("report flag after --: %v", err)
	}
	if rest := rc.Flags().Args(); len(rest) > 0 {
		return usagef("after --: unexpected argument %q (the Job names the shards' files)", rest[0])
	}
	if rc.Flags().Changed("json") {
		return usagef("after --: --json is the Job's to set (%s/merged.json)", recordsDir)
	}
	args := []string{"report"}
	for i := range o.Shards {
		args = append(args, fmt.Sprintf("%s/shard-%d.records.jsonl", recordsDir, i))
	}
	args = append(args, "--json", recordsDir+"/merged.json")
	args = append(args, o.Report...)
	name := o.Name + "-report"
	pod := podSpec{RestartPolicy: "Never", SecurityContext: podSecurity(),
		Containers: []container{{Name: "report", Image: o.Image, ImagePullPolicy: "IfNotPresent", Args: args, WorkingDir: scratchDir,
			SecurityContext: hardened(), VolumeMounts: []map[string]any{
				{"name": "records", "mountPath": recordsDir}, {"name": "scratch", "mountPath": scratchDir}}}},
		Volumes: []map[string]any{{"name": "records", "persistentVolumeClaim": map[string]any{"claimName": o.RecordsClaim}},
			{"name": "scratch", "emptyDir": map[string]any{}}},
	}
	job := manifest{APIVersion: "batch/v1", Kind: "Job", Metadata: objectMeta{Name: name, Namespace: o.Namespace, Labels: labels(o.Name, "report")},
		Spec: jobSpec{Completions: 1, Parallelism: 1, Template: podTemplate{Metadata: objectMeta{Labels: labels(o.Name, "report")}, Spec: pod}}}
	head := fmt.Sprintf("# goodput k8s collect: merges the %d shards' records of job/%s on claim %s; apply once that Job is complete.\n", o.Shards, o.Name, o.RecordsClaim)
	return writeManifests(env.Stdout, head, []manifest{job})
}

// writeManifests writes the head comment and the documents, "---" between.
func writeManifests(w io.Writer, head string, docs []manifest) error {
	var b bytes.Buffer
	b.WriteString(head)
	for _, d := range docs {
		b.WriteString("---\n")
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(d); err != nil {
			return err
		}
		if err := enc.Close(); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
