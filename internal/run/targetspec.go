package run

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
	"github.com/goodput/goodput/internal/scrape"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
	"github.com/goodput/goodput/internal/wire/protocols"
)

// TargetSpec is the target of a run as a user gives it: where requests
// go and how they look on the wire. Build checks it and makes the Target
// behind an wire.Client; a bad value is a *setting.Error naming the
// field.
type TargetSpec struct {
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
	// ScrapeInterval.
	ServerMetrics  []string
	ScrapeInterval time.Duration
}

// DefaultKeyEnv is APIKeyEnv's default; a protocol whose key is read
// from another variable (protocols.Protocol.KeyEnv) stands in for it.
const DefaultKeyEnv = "OPENAI_API_KEY"

// Protocol is the backend's canonical name and protocol, as the
// protocols table has them.
func (t *TargetSpec) Protocol() (string, wire.Protocol, error) {
	p, ok := protocols.Lookup(t.Backend)
	if !ok {
		name := strings.ToLower(strings.TrimSpace(t.Backend))
		return "", nil, setting.Errorf("Backend", strconv.Quote(t.Backend), "want %s%s", protocols.Help(), setting.DidYouMean(name, protocols.Names()))
	}
	return p.Name(), p.Wire, nil
}

// KeyEnv is the environment variable the API key is read from: the
// protocol's own while APIKeyEnv is left at its default.
func (t *TargetSpec) KeyEnv() string {
	if t.APIKeyEnv == DefaultKeyEnv {
		if p, ok := protocols.Lookup(t.Backend); ok && p.KeyEnv != "" {
			return p.KeyEnv
		}
	}
	return t.APIKeyEnv
}

// Base is the server root BaseURL or Host and Port give; "" for none.
func (t *TargetSpec) Base() string {
	if t.BaseURL == "" && t.Host != "" {
		return fmt.Sprintf("http://%s:%d", t.Host, t.Port)
	}
	return t.BaseURL
}

// RequestModel is the model id sent in requests.
func (t *TargetSpec) RequestModel() string {
	if t.ServedModelName != "" {
		return t.ServedModelName
	}
	return t.Model
}

// Header is Headers parsed.
func (t *TargetSpec) Header() (http.Header, error) {
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
func (t *TargetSpec) body() (map[string]any, error) {
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

// Build checks the spec and makes the target at base ("" starts the
// embedded simulator) behind an wire.Client.
func (t *TargetSpec) Build(base string, c Conn) (Target, error) {
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
		Open: func(baseURL string, maxConns int, now func() int64) (Backend, error) {
			cfg := cfg
			cfg.BaseURL, cfg.MaxConns, cfg.Now = baseURL, maxConns, now
			c, err := openai.NewClient(cfg)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
	}, nil
}

// Scrape is the scraping of the server's metrics asked for; nil for none.
func (t *TargetSpec) Scrape() (*ScrapeConfig, error) {
	if t.ScrapeInterval < time.Millisecond {
		return nil, setting.Errorf("ScrapeInterval", t.ScrapeInterval.String(), "want at least 1ms")
	}
	cfg := &ScrapeConfig{Auto: true, Interval: t.ScrapeInterval}
	for i, v := range t.ServerMetrics {
		if strings.EqualFold(strings.TrimSpace(v), "none") {
			if len(t.ServerMetrics) > 1 {
				return nil, setting.Errorf("ServerMetrics", "none", "scrape nothing, so give no other %v", setting.Name("ServerMetrics"))
			}
			return nil, nil
		}
		name, url, ok := strings.Cut(v, "=")
		if !ok || strings.Contains(name, "/") {
			name, url = fmt.Sprintf("metrics-%d", i+1), v
		}
		if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
			return nil, setting.Errorf("ServerMetrics", strconv.Quote(v), "want an http(s) URL, NAME=URL, or none")
		}
		cfg.Targets = append(cfg.Targets, scrape.Target{Name: name, URL: url})
	}
	return cfg, nil
}

// ForSessions fits the backend to sessions, whose history goes as a
// conversation: openai-chat unless Backend was given (openai-responses
// when the answers are chained), else one that carries a conversation.
// It returns the protocol.
func (t *TargetSpec) ForSessions(chained bool, given setting.Given) (wire.Protocol, error) {
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
