package simvalidate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simvalidate"
)

// Validate replays a sweep's points, given as a CSV of vLLM's result
// keys, and returns the matrix: here two closed-loop points, the second
// on two replicas (its dp column), each with the mean TTFT and P99 TPOT
// the real server measured.
func ExampleValidate() {
	dir, err := os.MkdirTemp("", "validate")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	csv := "name,isl,osl,concurrency,num_prompts,dp,mean_ttft_ms,p99_tpot_ms\n" +
		"c8,1024,128,8,64,,45,9.5\n" +
		"c8-dp2,1024,128,8,64,2,40,8.0\n"
	if err := os.WriteFile(filepath.Join(dir, "sweep.csv"), []byte(csv), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	m, err := simvalidate.Validate(context.Background(), simvalidate.Spec{
		Dir: dir, Base: sim.DefaultConfig(), Inputs: []simvalidate.Input{{Truth: "sweep.csv"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range m.Sections[0].Cells {
		fmt.Printf("%s %s: real %g %s, simulated %t\n", c.Run, c.Label(), c.Truth, c.Unit, c.Sim > 0)
	}
	// Output:
	// c8 TTFT mean: real 45 ms, simulated true
	// c8 TPOT P99: real 9.5 ms, simulated true
	// c8-dp2 TTFT mean: real 40 ms, simulated true
	// c8-dp2 TPOT P99: real 8 ms, simulated true
}
