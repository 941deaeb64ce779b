package wire_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/wire"
)

// An error event's text reads the same whatever the protocol calls its
// kind: Anthropic's type, the Responses API's code.
func ExampleErrorText() {
	var buf []byte
	fmt.Println(string(wire.ErrorText(&buf, []byte("overloaded_error"), []byte("Overloaded"), nil)))
	fmt.Println(string(wire.ErrorText(&buf, nil, []byte("Overloaded"), nil)))
	fmt.Println(string(wire.ErrorText(&buf, nil, nil, []byte("unknown error"))))
	// Output:
	// overloaded_error: Overloaded
	// Overloaded
	// unknown error
}
