package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// InterruptContext returns a context that the first SIGINT or SIGTERM
// cancels: the command winds down and still writes its summary, result
// and the records' end line. A second interrupt is absorbed with a note,
// because one interrupt often arrives twice (GNU timeout signals the
// process and then its whole group); a third ends the process the default
// way, for a user who wants out now. stop releases the signals.
func InterruptContext(stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 1; ; n++ {
			var s os.Signal
			select {
			case s = <-sigs:
			case <-done:
				return
			}
			switch n {
			case 1:
				cancel()
			case 2:
				fmt.Fprintln(stderr, "goodput: still writing the summary; interrupt once more to quit without it")
			default:
				signal.Reset(s)
				if p, err := os.FindProcess(os.Getpid()); err == nil {
					_ = p.Signal(s)
				}
				os.Exit(ExitInterrupted) // where the signal did not end it
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
