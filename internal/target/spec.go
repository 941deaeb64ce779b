// Package target is the target of a load as a user gives it — where
// requests go (base URL, or host and port), which wire protocol of the
// table they speak, the model, key, headers, TLS, sampling parameters and
// timeouts — checked and built into the client settings that dial it.
// bench, sweep and sim (through run) and watch share it, so one target
// flag or watch config key means the same thing everywhere.
//
// It stands one floor above internal/wire/protocols, not inside it: the
// table is read by the proxy, the simulator's server and the Prometheus
// exporter, which have no use for a user's URL, key or sampling settings,
// and a target needs the table (names, aliases, key variables) and the
// clients it names. It knows nothing of a run's lifecycle: run adapts a
// Target into its own (run.NewTarget), and scraping the server's metrics
// during a run is run's (run.ScrapeFor).
//
// A Spec is a plain value: not safe for concurrent use while it is being
// filled or fitted (ForSessions); a built Target is safe to Open from
// several goroutines.
package target

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/protocols"
)

// Spec is the target of a run as a user gives it: where requests
// go and how they look on the wire. Build checks it and makes the Target
// a wire.Client dials; a bad value is a *setting.Error naming the
// field.
type Spec struct {
	// BaseURL is the server root, or Host and Port make it; none starts
	// the embedded simulator.
	BaseURL, Host string
	Port          int
	// Backend names the wire API (a protocols name or alias); Endpoint
	// replaces its default path.
	Backend, Endpoint string
	// Model names the model (and tokenizer) in the records and is the id
	// requested unless ServedModelName is set.
	Model, ServedModelName string
	// Headers are K=V request headers; ExtraBody a JSON object merged into
	// every body (after the sampling parameters, so it wins).
	Headers   []string
	ExtraBody string
	// APIKeyEnv is the environment variable of the API key (KeyEnv).
	APIKeyEnv string
	// RequestIDPrefix prefixes the x-request-id header ("": the run's).
	RequestIDPrefix string
	// IgnoreEOS sends ignore_eos: every request generates its full length.
	IgnoreEOS bool
	// MaxTokensField is max_tokens or max_completion_tokens.
	MaxTokensField string
	// ContinuousUsage is auto, on or off.
	ContinuousUsage string
	// Timeout limits a whole request, IdleTimeout the server's silence,
	// ReadyCheckTimeout the wait for a starting server (0: none).
	Timeout, IdleTimeout, ReadyCheckTimeout time.Duration
	// FollowRedirects follows same-origin redirects, Insecure skips TLS
	// verification, NoStream measures whole answers.
	FollowRedirects, Insecure, NoStream bool
	// MaxResponseTokens caps a response to a request without max_tokens.
	MaxResponseTokens int
	// The sampling parameters, sent only when given (non-nil).
	Temperature, TopP, MinP                              *float64
	FrequencyPenalty, PresencePenalty, RepetitionPenalty *float64
	TopK                                                 *int
	// ServerMetrics are metrics endpoints to scrape besides the
	// target's own (URL or NAME=URL; none: scrape nothing), every
	// ScrapeInterval. Scraping is a run's, so run.ScrapeFor checks them;
	// they sit here because the flags that fill them are the target's.
	ServerMetrics  []string
	ScrapeInterval time.Duration
}

// DefaultKeyEnv is APIKeyEnv's default; a protocol whose key is read
// from another variable (protocols.Protocol.KeyEnv) stands in for it.
const DefaultKeyEnv = "OPENAI_API_KEY"

// Protocol is the backend's canonical name and protocol, as the
// protocols table has them.
func (t *Spec) Protocol() (string, wire.Protocol, error) {
	p, ok := protocols.Lookup(t.Backend)
	if !ok {
		name := strings.ToLower(strings.TrimSpace(t.Backend))
		return "", nil, setting.Errorf("Backend", strconv.Quote(t.Backend), "want %s%s", protocols.Help(), setting.DidYouMean(name, protocols.Names()))
	}
	return p.Name(), p.Wire, nil
}

// KeyEnv is the environment variable the API key is read from: the
// protocol's own while APIKeyEnv is left at its default.
func (t *Spec) KeyEnv() string {
	if t.APIKeyEnv == DefaultKeyEnv {
		if p, ok := protocols.Lookup(t.Backend); ok && p.KeyEnv != "" {
			return p.KeyEnv
		}
	}
	return t.APIKeyEnv
}

// Base is the server root BaseURL or Host and Port give; "" for none.
func (t *Spec) Base() string {
	if t.BaseURL == "" && t.Host != "" {
		return fmt.Sprintf("http://%s:%d", t.Host, t.Port)
	}
	return t.BaseURL
}

// RequestModel is the model id sent in requests.
func (t *Spec) RequestModel() string {
	if t.ServedModelName != "" {
		return t.ServedModelName
	}
	return t.Model
}

// Header is Headers parsed.
func (t *Spec) Header() (http.Header, error) {
	h := http.Header{}
	for _, kv := range t.Headers {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, setting.Errorf("Headers", strconv.Quote(kv), "want KEY=VALUE")
		}
		h.Set(strings.TrimSpace(k), v)
	}
	return h, nil
}

// body is the sampling parameters given and ExtraBody, merged; nil when
// empty.
func (t *Spec) body() (map[string]any, error) {
	m := map[string]any{}
	for k, v := range map[string]*float64{"temperature": t.Temperature, "top_p": t.TopP, "min_p": t.MinP,
		"frequency_penalty": t.FrequencyPenalty, "presence_penalty": t.PresencePenalty, "repetition_penalty": t.RepetitionPenalty} {
		if v != nil {
			m[k] = *v
		}
	}
	if t.TopK != nil {
		m["top_k"] = *t.TopK
	}
	if strings.TrimSpace(t.ExtraBody) != "" {
		var body map[string]any
		if err := json.Unmarshal([]byte(t.ExtraBody), &body); err != nil {
			return nil, setting.Errorf("ExtraBody", "", "not a JSON object: %v", err)
		}
		maps.Copy(m, body)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// Conn is what a target's client takes besides its spec.
type Conn struct {
	// APIKey is the key read from KeyEnv.
	APIKey string
	// KeepText keeps every answer's text (a session's later turns resend
	// it; detailed results store it).
	KeepText bool
	// ReadyPoll is how often a starting server is asked again.
	ReadyPoll time.Duration
	// Secrets, when set, learns the credentials the target is given —
	// the key, every header value (which are credentials cannot be told),
	// the base URL's user info — so that no output shows them.
	Secrets *redact.Secrets
}

// ForSessions fits the backend to sessions, whose history goes as a
// conversation: openai-chat unless Backend was given (openai-responses
// when the answers are chained), else one that carries a conversation.
// It returns the protocol.
func (t *Spec) ForSessions(chained bool, given setting.Given) (wire.Protocol, error) {
	switch _, proto, err := t.Protocol(); {
	case err != nil:
		return nil, err
	case !given.Has("Backend") && chained:
		t.Backend = "openai-responses"
	case !given.Has("Backend"):
		t.Backend = "openai-chat"
	case !proto.Chat():
		return nil, setting.Errorf("Backend", t.Backend, "sessions send their history as a conversation; use openai-chat (the default for sessions), openai-responses or anthropic-messages")
	default:
		return proto, nil
	}
	_, proto, err := t.Protocol()
	return proto, err
}

// Build checks the spec and makes the target at base ("" for the
// embedded simulator, which the caller starts and Opens at its URL).
func (t *Spec) Build(base string, c Conn) (Target, error) {
	hdr, err := t.Header()
	if err != nil {
		return Target{}, err
	}
	if c.Secrets != nil {
		if u, err := url.Parse(base); err == nil {
			c.Secrets.AddURL(u)
		}
		c.Secrets.Add(c.APIKey)
		c.Secrets.AddHeader(hdr, true)
	}
	extra, err := t.body()
	if err != nil {
		return Target{}, err
	}
	if f := t.MaxTokensField; f != "max_tokens" && f != "max_completion_tokens" {
		return Target{}, setting.Errorf("MaxTokensField", strconv.Quote(f), "want max_tokens or max_completion_tokens")
	}
	api, proto, err := t.Protocol()
	if err != nil {
		return Target{}, err
	}
	endpoint := proto.Path()
	if t.Endpoint != "" {
		endpoint = t.Endpoint
	}
	var usageOn, usageAuto bool
	switch strings.ToLower(t.ContinuousUsage) {
	case "on", "true":
		usageOn = true
	case "off", "false":
	case "auto":
		usageAuto = true
	default:
		return Target{}, setting.Errorf("ContinuousUsage", strconv.Quote(t.ContinuousUsage), "want auto, on or off")
	}
	model := t.Model
	if model == "" {
		model = t.ServedModelName // it names the model in the records too
	}
	cfg := wire.Config{
		Protocol: proto, Endpoint: endpoint, Model: t.RequestModel(), APIKey: c.APIKey, Headers: hdr,
		ExtraBody: extra, IgnoreEOS: t.IgnoreEOS, MaxTokensField: t.MaxTokensField, Timeout: t.Timeout,
		IdleTimeout: t.IdleTimeout, ContinuousUsage: usageOn, AutoUsage: usageAuto,
		ReadyPoll: c.ReadyPoll, NoStream: t.NoStream, KeepText: c.KeepText, Insecure: t.Insecure,
		FollowRedirects: t.FollowRedirects, MaxResponseTokens: t.MaxResponseTokens,
	}
	return Target{
		// The target as records and reports name it: no user info, no
		// credential-like query values.
		BaseURL: base, Name: redact.URLString(base), API: api, Endpoint: endpoint, Model: model,
		NoStream: t.NoStream || !proto.Streams(), ReadyWait: t.ReadyCheckTimeout, RequestIDPrefix: t.RequestIDPrefix,
		cfg: cfg,
	}, nil
}
