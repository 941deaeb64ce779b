package cli

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// console serialises what goes to stderr while a live progress line is
// drawn on a terminal: a note (a warning from the embedded simulator, say)
// clears the line, prints above it and redraws it, instead of landing in the
// middle of it. Safe for concurrent use.
type console struct {
	mu   sync.Mutex
	w    io.Writer
	tty  bool
	line string // the live line now drawn ("" when none)
}

func newConsole(w io.Writer, tty bool) *console { return &console{w: w, tty: tty} }

// consoleOf returns env's console, or one of its own for an Env built
// without Main (tests).
func consoleOf(env Env) *console {
	if env.console != nil {
		return env.console
	}
	return newConsole(env.Stderr, env.TTY)
}

// draw replaces the live line (a terminal only).
func (c *console) draw(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pad := max(len(c.line)-len(line), 0)
	fmt.Fprintf(c.w, "\r%s%*s", line, pad, "")
	c.line = line
}

// end finishes the live line with a newline and forgets it.
func (c *console) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.line != "" {
		fmt.Fprintln(c.w)
		c.line = ""
	}
}

// Write prints p above the live line: the line is cleared first and drawn
// again after, so notes and progress never share a line.
func (c *console) Write(p []byte) (int, error) {
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
