package gate

import "testing"

// TestCheckJSON: p99 600 > 500 holds, so it is named; a gate of no
// conditions reads nothing; a document that is not JSON is an error.
func TestCheckJSON(t *testing.T) {
	g, err := Parse([]string{"p99_ttft_ms>500", "completed<1"})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := g.CheckJSON([]byte(`{"p99_ttft_ms": 600, "completed": 10}`))
	if err != nil || len(failed) != 1 {
		t.Errorf("CheckJSON = %q, %v; want the one condition that holds", failed, err)
	}
	if _, err := g.CheckJSON([]byte(`not json`)); err == nil {
		t.Error("CheckJSON(not json): no error")
	}
	if failed, err := (Gate{}).CheckJSON([]byte(`not json`)); failed != nil || err != nil {
		t.Errorf("empty gate: %q, %v", failed, err)
	}
}
