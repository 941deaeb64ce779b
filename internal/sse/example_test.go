package sse_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/goodput/goodput/internal/sse"
)

func Example() {
	var wire bytes.Buffer
	w := sse.NewWriter(&wire)
	_ = w.WriteEvent("", "", []byte(`{"choices":[{"delta":{"content":"Hi"}}]}`))
	_ = w.WriteComment("keep-alive")
	_ = w.WriteEvent("", "", []byte("[DONE]"))

	// A fake clock: real callers pass a monotonic nanosecond reading.
	tick := int64(0)
	r := sse.NewReader(strings.NewReader(wire.String()), func() int64 { tick++; return tick }, 0)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("at %d: %s\n", ev.At, ev.Data)
	}
	// Output:
	// at 1: {"choices":[{"delta":{"content":"Hi"}}]}
	// at 1: [DONE]
}
