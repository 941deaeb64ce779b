// Package k8s builds the Kubernetes objects that run one load as shards on
// many machines: an Indexed Job of goodput pods, one shard of one schedule
// each, with a headless Service through which they reach pod 0's
// rendezvous and a ConfigMap for a workload file (Job); and the Job that
// merges the shards' records from a shared claim (Collect). Write encodes
// them as one YAML stream for kubectl apply -f -.
//
// The specs are plain data: what the pods run (their arguments) and the
// workload file's bytes come from the caller, so this package reads no file
// and knows no command line. It checks what Kubernetes would refuse (object
// names, quantities, ports, Secret and ConfigMap keys, a ConfigMap's size)
// and reports it as a *SpecError naming the spec's field. The head comments
// (JobHead, CollectHead) are written for goodput's user: the pods run
// goodput, so they name its commands.
//
// The package holds no state: everything in it is safe for concurrent use.
package k8s

import (
	"bytes"
	"io"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Where the pods keep what they read and write.
const (
	// WorkloadDir is where the workload ConfigMap is mounted, read-only.
	WorkloadDir = "/workload"
	// RecordsDir is where the records claim is mounted.
	RecordsDir = "/records"
	// MergedPath is the file on the records claim that the collector's
	// result JSON is meant to go to.
	MergedPath = RecordsDir + "/merged.json"
	// ShardIndexRef stands in a shard pod's Args for the pod's index: the
	// kubelet expands $(SHARD_INDEX) from the container's environment, in
	// which Job sets SHARD_INDEX when the spec has a records claim
	// (JOB_COMPLETION_INDEX, which Kubernetes sets itself, is not declared
	// in the container's env and so would not be expanded).
	ShardIndexRef = "$(SHARD_INDEX)"
	// scratchDir is the pods' working directory, an emptyDir: the root
	// filesystem is read-only.
	scratchDir = "/tmp"
	// nonRootUID is the distroless image's "nonroot" user.
	nonRootUID = 65532
)

// WorkloadPath is where a pod reads the workload file named name (a
// File.Name) from the ConfigMap's mount.
func WorkloadPath(name string) string { return WorkloadDir + "/" + name }

// ShardRecords is shard index's records file on the records claim, as the
// pods mount it: index is a decimal index, or ShardIndexRef in a shard
// pod's own Args.
func ShardRecords(index string) string { return RecordsDir + "/shard-" + index + ".records.jsonl" }

// Rendezvous is pod 0's HOST:PORT as the other pods reach it: the pod's
// hostname (NAME-0) under the Job's headless Service (NAME), which is the
// pods' subdomain.
func Rendezvous(name string, port int) string {
	return name + "-0." + name + ":" + strconv.Itoa(port)
}

// Manifest is one Kubernetes object, its fields in the order kubectl
// writes them.
type Manifest struct {
	// APIVersion and Kind say what the object is ("batch/v1", "Job").
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Metadata names the object.
	Metadata ObjectMeta `yaml:"metadata"`
	// Data is a ConfigMap's data, by key (nil for other kinds).
	Data map[string]string `yaml:"data,omitempty"`
	// Spec is the object's spec, in this package's types or plain maps;
	// it is meant to be encoded (Write), not read.
	Spec any `yaml:"spec,omitempty"`
}

// ObjectMeta is the part of an object's metadata these manifests set.
type ObjectMeta struct {
	// Name is the object's name ("" in a pod template: the Job names its
	// pods).
	Name string `yaml:"name,omitempty"`
	// Namespace is the object's namespace ("": kubectl's current).
	Namespace string `yaml:"namespace,omitempty"`
	// Labels are the object's labels (see labels).
	Labels map[string]string `yaml:"labels,omitempty"`
}

type jobSpec struct {
	CompletionMode string      `yaml:"completionMode,omitempty"`
	Completions    int         `yaml:"completions"`
	Parallelism    int         `yaml:"parallelism"`
	BackoffLimit   int         `yaml:"backoffLimit"`
	Template       podTemplate `yaml:"template"`
}

type podTemplate struct {
	Metadata ObjectMeta `yaml:"metadata"`
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

// labels are the objects' labels: the instance (the Job's name) selects
// the pods, for the Service and the anti-affinity; the component tells the
// shards' objects from the collector's.
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

// Write writes head (comment lines, each ending in a newline) and the
// documents, each opened by "---", to w in one write, so that a failed
// encoding leaves nothing half written.
func Write(w io.Writer, head string, docs []Manifest) error {
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
