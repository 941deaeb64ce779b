package gate_test

import (
	"encoding/json"
	"fmt"

	"github.com/goodput/goodput/internal/gate"
)

// A gate fails a CI run when a bound on the result JSON holds.
func Example() {
	g, err := gate.Parse([]string{"p99_ttft_ms>500", "request_goodput<10", "slo.good<90"})
	if err != nil {
		fmt.Println(err)
		return
	}
	var result map[string]any
	_ = json.Unmarshal([]byte(`{"p99_ttft_ms": 612.5, "request_goodput": 12.4, "slo": {"good": 95}}`), &result)
	for _, f := range g.Check(result) {
		fmt.Println(f)
	}
	// Output: p99_ttft_ms>500: p99_ttft_ms is 612.5
}
