package workload_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

func Example() {
	ds, err := workload.FromOptions(workload.Options{NumPrompts: 3, Seed: 1, RandomInputLen: 50, RandomOutputLen: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	arrivals := workload.NewArrivals(0, 1, 1) // rate 0: send everything at once
	for i := range ds.Len() {
		r := ds.Request(i)
		fmt.Println(arrivals.Next(), r.PromptTokens, tokenize.Approx{}.Count(r.Prompt), r.OutputTokens)
	}
	// Output:
	// 0s 50 50 8
	// 0s 50 50 8
	// 0s 50 50 8
}
