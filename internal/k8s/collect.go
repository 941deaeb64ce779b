package k8s

import "fmt"

// CollectSpec is the collector: a Job of one pod that reads every shard's
// records file from the claim the shards wrote them to and merges them.
type CollectSpec struct {
	// Name is the shards' Job's name; the collector is NAME-report.
	Name string
	// Namespace is the shards' namespace, the collector's too ("":
	// kubectl's current).
	Namespace string
	// Shards is the shards' count (at least 1).
	Shards int
	// Image is goodput's image; Args what its entrypoint runs (reading
	// ShardRecords of each index, writing MergedPath, say).
	Image string
	Args  []string
	// RecordsClaim is the PersistentVolumeClaim holding the shards'
	// records, mounted at RecordsDir (required).
	RecordsClaim string
}

// Check reports the first value of s that Collect would refuse, as a
// *SpecError, or nil. Collect checks s itself; Check lets a caller fail
// early, before it has filled Args.
func (s CollectSpec) Check() error {
	if err := checkShards(s.Shards); err != nil {
		return err
	}
	if s.RecordsClaim == "" {
		return specErr("RecordsClaim", "", "want the claim the shards wrote their records to")
	}
	if err := checkClaim(s.RecordsClaim); err != nil {
		return err
	}
	if err := checkImage(s.Image); err != nil {
		return err
	}
	return checkName(s.Name, s.Namespace, s.Shards)
}

// collectorName is the collector Job's name for the shards' Job name.
func collectorName(name string) string { return name + "-report" }

// Collect checks s and returns the collector Job.
func Collect(s CollectSpec) ([]Manifest, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	pod := podSpec{RestartPolicy: "Never", SecurityContext: podSecurity(),
		Containers: []container{{Name: "report", Image: s.Image, ImagePullPolicy: "IfNotPresent", Args: s.Args, WorkingDir: scratchDir,
			SecurityContext: hardened(), VolumeMounts: []map[string]any{
				{"name": "records", "mountPath": RecordsDir}, {"name": "scratch", "mountPath": scratchDir}}}},
		Volumes: []map[string]any{{"name": "records", "persistentVolumeClaim": map[string]any{"claimName": s.RecordsClaim}},
			{"name": "scratch", "emptyDir": map[string]any{}}},
	}
	job := Manifest{APIVersion: "batch/v1", Kind: "Job",
		Metadata: ObjectMeta{Name: collectorName(s.Name), Namespace: s.Namespace, Labels: labels(s.Name, "report")},
		Spec:     jobSpec{Completions: 1, Parallelism: 1, Template: podTemplate{Metadata: ObjectMeta{Labels: labels(s.Name, "report")}, Spec: pod}}}
	return []Manifest{job}, nil
}

// CollectHead is the comment the collector's manifest opens with: what it
// merges, and when to apply it.
func CollectHead(s CollectSpec) string {
	return fmt.Sprintf("# goodput k8s collect: merges the %d shards' records of job/%s on claim %s; apply once that Job is complete.\n", s.Shards, s.Name, s.RecordsClaim)
}
