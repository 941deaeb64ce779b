package report

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// Console serialises what goes to stderr while a live progress line is
// drawn on a terminal: a note (a warning from the embedded simulator, say)
// clears the line, prints above it and redraws it, instead of landing in the
// middle of it. Safe for concurrent use.
type Console struct {
	mu   sync.Mutex
	w    io.Writer
	tty  bool
	line string // the live line now drawn ("" when none)
}

// NewConsole writes to w, a terminal when tty.
func NewConsole(w io.Writer, tty bool) *Console { return &Console{w: w, tty: tty} }

// Draw replaces the live line (a terminal only).
func (c *Console) Draw(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pad := max(len(c.line)-len(line), 0)
	fmt.Fprintf(c.w, "\r%s%*s", line, pad, "")
	c.line = line
}

// End finishes the live line with a newline and forgets it.
func (c *Console) End() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.line != "" {
		fmt.Fprintln(c.w)
		c.line = ""
	}
}

// Write prints p above the live line: the line is cleared first and drawn
// again after, so notes and progress never share a line.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.line == "" {
		return c.w.Write(p)
	}
	fmt.Fprintf(c.w, "\r%*s\r", len(c.line), "")
	n, err := c.w.Write(p)
	if len(p) > 0 && !bytes.HasSuffix(p, []byte("\n")) {
		fmt.Fprintln(c.w)
	}
	fmt.Fprint(c.w, c.line)
	return n, err
}
