package k8s

import (
	"fmt"
	"strings"
	"time"
)

// JobSpec is the shards' Job: Shards pods of Image, pod I running Args as
// shard I of one schedule, spread over nodes, pod 0 reachable at
// Rendezvous(Name, Port) through a headless Service.
type JobSpec struct {
	// Name names the Job, its headless Service, its ConfigMap
	// (NAME-workload) and its pods (NAME-INDEX, which must be a DNS label
	// too: at most 63 characters).
	Name string
	// Namespace is the objects' namespace ("": kubectl's current).
	Namespace string
	// Shards is the pod count, one shard each (at least 1).
	Shards int
	// Image is goodput's image; Args what its entrypoint runs in every pod
	// ($(VAR) of the container's environment expanded by the kubelet, as
	// ShardIndexRef is).
	Image string
	Args  []string
	// CPU and Memory are each pod's requests, and equal limits, as
	// Kubernetes quantities (2, 500m, 1Gi), so a shard gets the CPU its
	// pacing was planned with.
	CPU, Memory string
	// Port is pod 0's rendezvous port (1 to 65535), the Service's too.
	Port int
	// Spread is how hard the pods spread over nodes; there is no default.
	Spread Spread
	// RecordsClaim is a ReadWriteMany PersistentVolumeClaim mounted at
	// RecordsDir, with SHARD_INDEX set so that Args can name
	// ShardRecords(ShardIndexRef) ("": none; the pods' records go where
	// Args say, e.g. their logs).
	RecordsClaim string
	// Workload is a file carried in a ConfigMap (NAME-workload) and
	// mounted at WorkloadPath(Workload.Name) (nil: none).
	Workload *File
	// APIKey is the Secret key whose value the pods get in the variable
	// APIKeyEnv, so the key is never in the manifests (nil: none, and
	// APIKeyEnv is unused).
	APIKey    *SecretKey
	APIKeyEnv string
}

// Check reports the first value of s that Job would refuse, as a
// *SpecError, or nil. Job checks s itself; Check lets a caller fail early,
// before it has filled Args, Workload and APIKey: those are checked only
// when set.
func (s JobSpec) Check() error {
	if err := checkShards(s.Shards); err != nil {
		return err
	}
	if err := checkImage(s.Image); err != nil {
		return err
	}
	switch {
	case !quantity.MatchString(s.CPU):
		return specErr("CPU", s.CPU, "want a CPU quantity, e.g. 2 or 500m")
	case !quantity.MatchString(s.Memory):
		return specErr("Memory", s.Memory, "want a memory quantity, e.g. 1Gi")
	case s.Port < 1 || s.Port > 65535:
		return specErr("Port", s.Port, "want 1 to 65535")
	case s.Spread != SpreadPreferred && s.Spread != SpreadRequired:
		return specErr("Spread", string(s.Spread), "want preferred or required")
	}
	if err := checkClaim(s.RecordsClaim); err != nil {
		return err
	}
	if err := checkName(s.Name, s.Namespace, s.Shards); err != nil {
		return err
	}
	if s.Workload != nil {
		if err := checkFile(s.Workload); err != nil {
			return err
		}
	}
	if s.APIKey != nil {
		return checkSecretKey(s.APIKey, s.APIKeyEnv)
	}
	return nil
}

// Job checks s and returns the shards' objects, in the order they are to
// be applied: the ConfigMap (with a Workload), the headless Service, the
// Indexed Job.
func Job(s JobSpec) ([]Manifest, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	var docs []Manifest
	var env []map[string]any
	mounts := []map[string]any{{"name": "scratch", "mountPath": scratchDir}}
	volumes := []map[string]any{{"name": "scratch", "emptyDir": map[string]any{}}}
	if f := s.Workload; f != nil {
		cm := Manifest{APIVersion: "v1", Kind: "ConfigMap",
			Metadata: ObjectMeta{Name: s.Name + "-workload", Namespace: s.Namespace, Labels: labels(s.Name, "bench")},
			Data:     map[string]string{f.Name: string(f.Data)}}
		docs = append(docs, cm)
		mounts = append(mounts, map[string]any{"name": "workload", "mountPath": WorkloadDir, "readOnly": true})
		volumes = append(volumes, map[string]any{"name": "workload", "configMap": map[string]any{"name": cm.Metadata.Name}})
	}
	if s.RecordsClaim != "" {
		env = append(env, map[string]any{"name": "SHARD_INDEX", "valueFrom": map[string]any{"fieldRef": map[string]any{
			"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
		mounts = append(mounts, map[string]any{"name": "records", "mountPath": RecordsDir})
		volumes = append(volumes, map[string]any{"name": "records", "persistentVolumeClaim": map[string]any{"claimName": s.RecordsClaim}})
	}
	if s.APIKey != nil {
		env = append(env, map[string]any{"name": s.APIKeyEnv, "valueFrom": map[string]any{
			"secretKeyRef": map[string]any{"name": s.APIKey.Name, "key": s.APIKey.Key}}})
	}
	term := map[string]any{
		"labelSelector": map[string]any{"matchLabels": map[string]string{"app.kubernetes.io/instance": s.Name}},
		"topologyKey":   "kubernetes.io/hostname",
	}
	anti := map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []map[string]any{{"weight": 100, "podAffinityTerm": term}}}
	if s.Spread == SpreadRequired {
		anti = map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []map[string]any{term}}
	}
	res := map[string]any{"cpu": s.CPU, "memory": s.Memory}
	pod := podSpec{
		RestartPolicy: "Never", Subdomain: s.Name, Affinity: map[string]any{"podAntiAffinity": anti}, SecurityContext: podSecurity(),
		Containers: []container{{
			Name: "bench", Image: s.Image, ImagePullPolicy: "IfNotPresent", Args: s.Args, WorkingDir: scratchDir, Env: env,
			Ports:     []map[string]any{{"name": "rendezvous", "containerPort": s.Port, "protocol": "TCP"}},
			Resources: map[string]any{"requests": res, "limits": res}, SecurityContext: hardened(), VolumeMounts: mounts,
		}},
		Volumes: volumes,
	}
	docs = append(docs, Manifest{
		APIVersion: "v1", Kind: "Service", Metadata: ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels(s.Name, "bench")},
		// Headless, and publishing pods before they are ready: the pods
		// meet at the rendezvous before any of them could be ready.
		Spec: map[string]any{"clusterIP": "None", "publishNotReadyAddresses": true,
			"selector": map[string]string{"app.kubernetes.io/instance": s.Name},
			"ports":    []map[string]any{{"name": "rendezvous", "port": s.Port, "targetPort": s.Port, "protocol": "TCP"}}},
	}, Manifest{
		APIVersion: "batch/v1", Kind: "Job", Metadata: ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels(s.Name, "bench")},
		Spec: jobSpec{CompletionMode: "Indexed", Completions: s.Shards, Parallelism: s.Shards,
			// A retried shard could not rejoin the schedule: a failed pod
			// is reported by the merge, not run again.
			BackoffLimit: 0,
			Template:     podTemplate{Metadata: ObjectMeta{Labels: labels(s.Name, "bench")}, Spec: pod}},
	})
	return docs, nil
}

// Schedule is what a Job's head comment says of the run beyond its spec.
type Schedule struct {
	// Target is the server's root URL, as the pods reach it.
	Target string
	// StartAt is the shards' fixed start as given (RFC 3339; "": pod 0's
	// rendezvous sets it once every pod has checked in), and Grace how
	// long past it a shard may start and still run.
	StartAt string
	Grace   time.Duration
}

// JobHead is the comment a Job's manifests open with: what they run, and
// the commands that apply them, wait for them and collect the shards'
// records (from the claim, or from the pods' logs).
func JobHead(s JobSpec, sc Schedule) string {
	ns := ""
	if s.Namespace != "" {
		ns = " -n " + s.Namespace
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# goodput k8s job: %d shards of one schedule against %s.\n", s.Shards, sc.Target)
	if sc.StartAt != "" {
		fmt.Fprintf(&b, "# The shards start at %s: apply before then (a start past by more than %s fails).\n", sc.StartAt, sc.Grace)
	} else {
		fmt.Fprintf(&b, "# Pod 0 sets the start once all %d pods have checked in at its rendezvous (%s).\n", s.Shards, Rendezvous(s.Name, s.Port))
	}
	fmt.Fprintf(&b, "#   kubectl%s apply -f THIS.yaml\n", ns)
	fmt.Fprintf(&b, "#   kubectl%s wait --for=condition=complete --timeout=24h job/%s\n", ns, s.Name)
	if s.RecordsClaim != "" {
		nsFlag := ""
		if s.Namespace != "" {
			nsFlag = " --namespace " + s.Namespace
		}
		fmt.Fprintf(&b, "#   goodput k8s collect --name %s --shards %d --records-claim %s%s | kubectl%s apply -f -\n", s.Name, s.Shards, s.RecordsClaim, nsFlag, ns)
		fmt.Fprintf(&b, "#   kubectl%s logs -f job/%s\n", ns, collectorName(s.Name))
	} else {
		fmt.Fprintf(&b, "#   for i in $(seq 0 %d); do kubectl%s logs -l batch.kubernetes.io/job-name=%s,batch.kubernetes.io/job-completion-index=$i --tail=-1 > shard-$i.records.jsonl; done\n", s.Shards-1, ns, s.Name)
		fmt.Fprintf(&b, "#   goodput report shard-*.records.jsonl\n")
	}
	return b.String()
}
