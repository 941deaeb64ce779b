package wire

import (
	"net/http"
	"strconv"

	"github.com/goodput/goodput/internal/runlog"
)

// ReplicaHeader is the response header in which a simulated fleet
// (goodput serve --replicas N) names the replica that served a request, as
// its engine label on /metrics: "1" to "N", the numbers the records carry.
// (simserve.ReplicaHeader is the same name; the client does not import
// the server.)
const ReplicaHeader = "X-Goodput-Replica"

// ReplicaOf is the record's replica number (from 1) named by h's
// ReplicaHeader; 0 when absent or not a replica index a record can hold.
func ReplicaOf(h http.Header) int {
	v := h.Get(ReplicaHeader)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > runlog.MaxReplica {
		return 0
	}
	return n
}
