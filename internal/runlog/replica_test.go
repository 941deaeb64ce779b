package runlog

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// A record of a simulated cluster says which replica served it; outside a
// cluster the key is left out, so files stay as they were.
func TestReplicaField(t *testing.T) {
	r := Record{ID: "a", Replica: 3, Status: 200, Chunks: []Chunk{}}
	line := AppendRecord(nil, &r)
	if !strings.Contains(string(line), `"replica":3`) {
		t.Errorf("AppendRecord(replica 3) = %s; want a replica key", line)
	}
	_, got, _, err := ReadAll(strings.NewReader(string(line)), "r.jsonl")
	if err != nil || len(got) != 1 || got[0].Replica != 3 {
		t.Fatalf("ReadAll(%s) = %+v, %v; want replica 3 back", line, got, err)
	}
	r.Replica = 0
	if line := AppendRecord(nil, &r); strings.Contains(string(line), `"replica"`) {
		t.Errorf("AppendRecord(no replica) = %s; want no replica key", line)
	}
	for _, bad := range []int{-1, MaxReplica + 1} {
		in := `{"id":"r","replica":` + strconv.Itoa(bad) + `,"status":200}` + "\n"
		_, _, _, err := ReadAll(strings.NewReader(in), "v.jsonl")
		var be *BadLineError
		if !errors.As(err, &be) || be.Line != 1 || !strings.Contains(err.Error(), "replica "+strconv.Itoa(bad)+" out of range") {
			t.Errorf("ReadAll(replica %d) error = %v; want a *BadLineError on line 1 naming the replica", bad, err)
		}
	}
}
