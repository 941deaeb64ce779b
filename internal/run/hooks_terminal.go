package run

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/goodput/goodput/internal/report"
)

// TerminalHooks show a run on a terminal: notes and the embedded
// simulator's warnings go to con, above the live progress line on stderr
// (tty: a terminal; quiet: no progress line).
func TerminalHooks(stderr io.Writer, con *report.Console, tty, quiet bool) Hooks {
	return Hooks{
		Note: func(s string) { fmt.Fprintln(con, "goodput: "+s) },
		// The server's warnings (e.g. a host too loaded to keep the
		// engine's schedule) go to the user's stderr, not the process's
		// default logger.
		Log: slog.New(slog.NewTextHandler(con, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Level: func(ctx context.Context, total int, limit time.Duration) Watch {
			p := report.NewProgress(stderr, con, tty, quiet, total, limit)
			p.Start(ctx)
			return p
		},
	}
}
