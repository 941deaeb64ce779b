package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/stats"
)

// The preset table, one preset with its sources, and the JSON, as golden
// files: what `goodput slo list` and `goodput slo show` print.
func TestPresetsGolden(t *testing.T) {
	var list, listSources, show, js bytes.Buffer
	if err := PresetsTerminal(&list, stats.Presets(), false); err != nil {
		t.Fatal(err)
	}
	if err := PresetsTerminal(&listSources, stats.Presets(), true); err != nil {
		t.Fatal(err)
	}
	chat, err := stats.LookupPreset("chat")
	if err != nil {
		t.Fatal(err)
	}
	if err := PresetTerminal(&show, chat); err != nil {
		t.Fatal(err)
	}
	if err := PresetsJSON(&js, stats.Presets()); err != nil {
		t.Fatal(err)
	}
	golden(t, "presets.golden", list.Bytes())
	golden(t, "presets_sources.golden", listSources.Bytes())
	golden(t, "preset_chat.golden", show.Bytes())
	var doc []map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || len(doc) != len(stats.Presets()) {
		t.Fatalf("PresetsJSON: %v, %d presets: %s", err, len(doc), js.String())
	}
	if ms, _ := doc[0]["request_ms"].(map[string]any); doc[0]["name"] != "chat" || ms["ttft"] != 450.0 {
		t.Errorf("first preset %v; want chat with ttft 450 ms", doc[0])
	}
}

func TestPresetByName(t *testing.T) {
	var b strings.Builder
	if err := Preset(&b, "nope", false); !errors.Is(err, stats.ErrUnknownPreset) {
		t.Errorf("Preset(nope) = %v; want ErrUnknownPreset", err)
	}
	name := stats.PresetNames()[0]
	if err := Preset(&b, name, true); err != nil || !json.Valid([]byte(b.String())) {
		t.Errorf("Preset(%s, json) = %v, %q", name, err, b.String())
	}
	b.Reset()
	if err := Presets(&b, false, true); err != nil || !strings.Contains(b.String(), name) {
		t.Errorf("Presets = %v, %q", err, b.String())
	}
}
