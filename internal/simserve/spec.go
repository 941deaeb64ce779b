package simserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// Spec is a server as a user gives it (goodput serve's flags): where it
// listens, the engine, the model id it answers to and a slowdown
// (Options' fields of the same names). Options and Server check it; their
// errors are *setting.Error naming Spec's fields, the engine's within
// Engine.
type Spec struct {
	Host            string
	Port            int
	Engine          sim.Config
	ServedModelName string
	Slowdown        float64
	SlowdownAfter   time.Duration
}

// Server is the server of Engine, or of fleet when not nil (its replicas
// configured as Engine, or as the fleet says), logging to log.
func (s Spec) Server(fleet *cluster.Config, log *slog.Logger) (*Server, error) {
	opt, err := s.Options(fleet != nil, log)
	if err != nil {
		return nil, err
	}
	var srv *Server
	if fleet == nil {
		srv, err = New(s.Engine, opt)
	} else {
		srv, err = NewFleet(*fleet, opt)
	}
	// A replica's engine setting is every replica's.
	return srv, setting.Within("Engine", err)
}

// Options checks s and is the server's Options, logging to log; fleet
// says several replicas serve (NewFleet), which keep schedules a slowdown
// cannot stretch.
func (s Spec) Options(fleet bool, log *slog.Logger) (Options, error) {
	slow, after := fmt.Sprint(s.Slowdown), s.SlowdownAfter.String()
	switch {
	case s.Port < 0 || s.Port > 65535:
		return Options{}, setting.Errorf("Port", strconv.Itoa(s.Port), "want 0-65535")
	case checkSlowdown(s.Slowdown) != nil && s.Slowdown != 0:
		return Options{}, setting.Errorf("Slowdown", slow, "want a factor above 0 and at most %d (1 is full speed)", MaxSlowdown)
	case s.SlowdownAfter < 0:
		return Options{}, setting.Errorf("SlowdownAfter", after, "want ≥ 0")
	case s.SlowdownAfter > 0 && s.Slowdown == 0:
		return Options{}, setting.Errorf("SlowdownAfter", after, "needs %v FACTOR", setting.Name("Slowdown"))
	case fleet && s.Slowdown != 0:
		return Options{}, setting.Errorf("Slowdown", slow, "not supported with several replicas (each keeps its own schedule)")
	}
	return Options{ServedModelName: s.ServedModelName, Logger: log, Slowdown: s.Slowdown, SlowdownAfter: s.SlowdownAfter}, nil
}

// Addr is the address to listen on, host:port.
func (s Spec) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Fleet says what the server drives, engine describing one engine (as
// Describe does): a split's pools, an autoscaled fleet (its replicas at
// the start, of at most Replicas), several replicas, or the engine alone.
func (s *Server) Fleet(engine string) string {
	switch start := s.describe.Replicas; {
	case s.fl.roles != nil:
		return fmt.Sprintf("%d prefill + %d decode replicas of %s", s.fl.prefill, len(s.fl.roles)-s.fl.prefill, engine)
	case s.fl.tick != 0:
		return fmt.Sprintf("%d of at most %d autoscaled replicas of %s", start, s.Replicas(), engine)
	case s.Replicas() > 1:
		return fmt.Sprintf("%d replicas of %s", s.Replicas(), engine)
	}
	return engine
}

// Serve serves as s says, over the fleet c and the gateway g give (given:
// which of c's settings were), until ctx is done, logging to stderr and
// noting there what it serves (describe names the engine from its
// Describe). Errors of c's and g's settings are *setting.Error of their fields.
func (s Spec) Serve(ctx context.Context, c cluster.Spec, g cluster.GatewaySpec, given setting.Given, stderr io.Writer, describe func(runlog.Engine) string) error {
	switch {
	case c.Ratios != "":
		return setting.Errorf("Ratios", "", "the search over prefill/decode splits runs in virtual time (goodput sim); goodput serve serves one fleet")
	case g.Mix != "":
		return setting.Errorf("Mix", "", "goodput serve takes each request's class from its body's priority field; the mix is a load generator's (goodput sim)")
	}
	fleet, err := c.Config(s.Engine, given)
	if err == nil {
		fleet, err = g.Apply(fleet, s.Engine)
	}
	if err != nil {
		return err
	}
	srv, err := s.Server(fleet, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		return err
	}
	url, stop, err := srv.Start(ctx, s.Addr())
	if le := (*ListenError)(nil); errors.As(err, &le) {
		// Only the port is the user's to change here (a busy one, most
		// often); the host is the interface.
		return &ListenError{Field: "Port", Value: strconv.Itoa(s.Port), Err: le.Err}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "goodput: serving %s as %q at %s (Ctrl-C to stop)\n", srv.Fleet(describe(srv.Describe())), srv.Model(), url)
	if s.Slowdown != 0 && s.Slowdown != 1 {
		fmt.Fprintf(stderr, "goodput: every engine iteration runs %v× as long from %v after the start (POST %s/goodput/slowdown?factor=1 restores full speed)\n",
			s.Slowdown, s.SlowdownAfter, url)
	}
	<-ctx.Done()
	return stop()
}
