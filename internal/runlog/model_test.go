package runlog

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestRecordModelRoundTrip: a record's model survives the hand-written
// encoder and the reader, and a record without one writes no key.
func TestRecordModelRoundTrip(t *testing.T) {
	line := AppendRecord(nil, &Record{ID: "r", Model: `llama "3"`})
	var got Record
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("AppendRecord wrote %s: %v", line, err)
	}
	if got.Model != `llama "3"` {
		t.Errorf("Model read back = %q; want %q", got.Model, `llama "3"`)
	}
	if line := AppendRecord(nil, &Record{ID: "r"}); bytes.Contains(line, []byte(`"model"`)) {
		t.Errorf("AppendRecord without a model wrote %s; want no model key", line)
	}
}
