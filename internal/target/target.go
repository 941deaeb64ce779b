package target

import (
	"time"

	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// Target is a Spec built for one server: how records name it, and the
// checked client settings Open dials it with. Its Open returns the
// concrete client, so each consumer (run's Backend, watch's) holds it
// behind an interface of its own.
type Target struct {
	// BaseURL is the server root; "" stands for the embedded simulator,
	// which the caller starts and Opens at its URL.
	BaseURL string
	// Name is the target as records name it: BaseURL without user info
	// or credential-like query values.
	Name string
	// API is the protocol's canonical name (openai, openai-chat) and
	// Endpoint the request path.
	API, Endpoint string
	// Model names the model in the records; "" takes the one the server
	// resolves.
	Model string
	// NoStream says requests are not streamed (only E2E is measured):
	// asked for, or a protocol that never streams.
	NoStream bool
	// ReadyWait is how long a starting server gets to answer (0: no
	// wait).
	ReadyWait time.Duration
	// RequestIDPrefix prefixes request ids ("": the caller's own).
	RequestIDPrefix string

	cfg wire.Config // the client's settings but where and how many
}

// Open makes the client of the server at baseURL (BaseURL, or the
// embedded simulator's once started), sized for maxConns requests in
// flight, timing on the clock now (nanoseconds).
func (t Target) Open(baseURL string, maxConns int, now func() int64) (*wire.Client, error) {
	cfg := t.cfg
	cfg.BaseURL, cfg.MaxConns, cfg.Now = baseURL, maxConns, now
	return openai.NewClient(cfg)
}
