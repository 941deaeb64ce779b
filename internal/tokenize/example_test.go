package tokenize_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/goodput/goodput/internal/tokenize"
)

func Example() {
	s, _ := tokenize.NewSynthesizer(tokenize.Approx{})
	text := s.Text(12, rand.New(rand.NewPCG(1, 1)))
	fmt.Println(tokenize.Approx{}.Count(text))
	fmt.Println(tokenize.Approx{}.Count("Hello, world! 12345"))
	// Output:
	// 12
	// 6
}
