package k8s_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/goodput/goodput/internal/k8s"
)

// The collector of a 2-shard Job's records: the caller gives the pod's
// arguments, naming the files where the shards' Job writes them.
func ExampleCollect() {
	s := k8s.CollectSpec{Name: "bench", Shards: 2, Image: "goodput:latest", RecordsClaim: "results",
		Args: []string{"report", k8s.ShardRecords("0"), k8s.ShardRecords("1"), "--json", k8s.MergedPath}}
	docs, err := k8s.Collect(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := k8s.Write(os.Stdout, k8s.CollectHead(s), docs); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # goodput k8s collect: merges the 2 shards' records of job/bench on claim results; apply once that Job is complete.
	// ---
	// apiVersion: batch/v1
	// kind: Job
	// metadata:
	//   name: bench-report
	//   labels:
	//     app.kubernetes.io/component: report
	//     app.kubernetes.io/instance: bench
	//     app.kubernetes.io/name: goodput
	// spec:
	//   completions: 1
	//   parallelism: 1
	//   backoffLimit: 0
	//   template:
	//     metadata:
	//       labels:
	//         app.kubernetes.io/component: report
	//         app.kubernetes.io/instance: bench
	//         app.kubernetes.io/name: goodput
	//     spec:
	//       restartPolicy: Never
	//       securityContext:
	//         fsGroup: 65532
	//         runAsGroup: 65532
	//         runAsNonRoot: true
	//         runAsUser: 65532
	//         seccompProfile:
	//           type: RuntimeDefault
	//       containers:
	//         - name: report
	//           image: goodput:latest
	//           imagePullPolicy: IfNotPresent
	//           args:
	//             - report
	//             - /records/shard-0.records.jsonl
	//             - /records/shard-1.records.jsonl
	//             - --json
	//             - /records/merged.json
	//           workingDir: /tmp
	//           securityContext:
	//             allowPrivilegeEscalation: false
	//             capabilities:
	//               drop:
	//                 - ALL
	//             readOnlyRootFilesystem: true
	//           volumeMounts:
	//             - mountPath: /records
	//               name: records
	//             - mountPath: /tmp
	//               name: scratch
	//       volumes:
	//         - name: records
	//           persistentVolumeClaim:
	//             claimName: results
	//         - emptyDir: {}
	//           name: scratch
}

// A mistake a user can make comes back naming the spec's field.
func ExampleSpecError() {
	s := k8s.CollectSpec{Name: "bench", Shards: 2, Image: "goodput:latest", RecordsClaim: "My_Claim"}
	_, err := k8s.Collect(s)
	fmt.Println(err)
	var se *k8s.SpecError
	if errors.As(err, &se) {
		fmt.Println(se.Field)
	}
	// Output:
	// records claim "My_Claim": want a PersistentVolumeClaim's name
	// RecordsClaim
}
