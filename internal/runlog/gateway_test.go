package runlog

import (
	"encoding/json"
	"strings"
	"testing"
)

// A request a gateway classed and degraded says so in its record, and
// both keys are left out when zero, so files of runs without a gateway
// are unchanged; AppendRecord writes what json.Marshal of the tags would.
func TestPriorityAndDegradedFields(t *testing.T) {
	r := Record{ID: "a", Priority: 2, Degraded: "max_tokens", Status: 200, Chunks: []Chunk{}}
	line := AppendRecord(nil, &r)
	if !strings.Contains(string(line), `"priority":2,"degraded":"max_tokens"`) {
		t.Errorf("AppendRecord = %s; want priority and degraded keys", line)
	}
	_, got, _, err := ReadAll(strings.NewReader(string(line)), "r.jsonl")
	if err != nil || len(got) != 1 || got[0].Priority != 2 || got[0].Degraded != "max_tokens" {
		t.Fatalf("ReadAll(%s) = %+v, %v; want priority 2, degraded max_tokens back", line, got, err)
	}
	var viaTags map[string]any
	if err := json.Unmarshal(line, &viaTags); err != nil || viaTags["priority"] != 2.0 || viaTags["degraded"] != "max_tokens" {
		t.Errorf("line %s decodes to %v, %v", line, viaTags, err)
	}
	r.Priority, r.Degraded = 0, ""
	if line := string(AppendRecord(nil, &r)); strings.Contains(line, `"priority"`) || strings.Contains(line, `"degraded"`) {
		t.Errorf("AppendRecord(zero) = %s; want neither key", line)
	}
	in := `{"id":"r","priority":-1,"status":200}` + "\n"
	if _, _, _, err := ReadAll(strings.NewReader(in), "v.jsonl"); err == nil || !strings.Contains(err.Error(), "priority -1 out of range") {
		t.Errorf("ReadAll(priority -1) = %v; want it refused", err)
	}
}
