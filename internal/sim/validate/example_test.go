package validate_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/sim/validate"
)

// A simulator's TPOTs against a real server's: the means differ by 2 %,
// well inside TOST's ±10 %, and KS finds no difference between the two
// distributions at these sizes.
func Example() {
	real := []float64{31, 33, 32, 34, 30, 33, 32, 31, 35, 32}
	simulated := []float64{32, 33, 33, 34, 31, 34, 33, 32, 35, 33}
	tost := validate.TOSTMean(real, simulated, validate.Margin)
	ks := validate.KS(real, simulated)
	fmt.Printf("mean %.1f vs %.1f ms (%+.1f%%): %s, 90%% interval [%+.1f%%, %+.1f%%]\n",
		tost.Truth, tost.Sim, 100*validate.SignedError(tost.Sim, tost.Truth), tost.Verdict, 100*tost.Lo, 100*tost.Hi)
	fmt.Printf("KS D=%.1f p=%.2f: %s\n", ks.D, ks.P, ks.Verdict)
	// Output:
	// mean 32.3 vs 33.0 ms (+2.2%): equivalent, 90% interval [-1.1%, +5.4%]
	// KS D=0.3 p=0.68: equivalent
}
