package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"go.yaml.in/yaml/v3"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/stats"
)

// Defaults of a target's settings left out of the config.
const (
	// DefaultInterval is the time between two probes of one target.
	DefaultInterval = 30 * time.Second
	// DefaultMaxTimeout caps the default timeout, which is otherwise the
	// interval: a probe slower than one interval only makes the next one
	// miss its turn.
	DefaultMaxTimeout = time.Minute
	// DefaultObjective is the share of probes that must be good (the SLO
	// objective the burn rate is measured against).
	DefaultObjective = 0.99
	// DefaultPromptTokens and DefaultMaxTokens size a probe: short enough
	// to cost little, long enough for TTFT to include a real prefill and
	// TPOT to have a few dozen gaps.
	DefaultPromptTokens = 128
	DefaultMaxTokens    = 64
	// DefaultBackend is the wire API of a target that names none: most
	// commercial APIs speak OpenAI's chat completions.
	DefaultBackend = "openai-chat"
)

// Embedded is the base_url that asks for goodput's embedded simulator in
// place of a vendor (whoever opens the backend starts it), to try a config
// or test the pipeline with no network.
const Embedded = "embedded"

// maxProbeTokens bounds prompt_tokens and max_tokens: a probe is small.
const maxProbeTokens = 1 << 20

// Config is a parsed watch configuration: the targets, with every default
// and global setting already applied to each.
type Config struct {
	// File is the name the config was read from, used in messages.
	File string
	// Targets are the endpoints to probe, in file order (which sets their
	// phases in the schedule).
	Targets []Target
}

// Target is one vendor endpoint to probe.
type Target struct {
	// Name labels the target's metrics (vendor) and names its records
	// file; unique in the config, [A-Za-z0-9._-], at most 64 bytes.
	Name string
	// BaseURL is the server root, e.g. https://api.example.com, or Embedded.
	BaseURL string
	// Backend names the wire API (e.g. openai-chat); it is passed through
	// to whoever opens the backend, which checks it.
	Backend string
	// Endpoint is the request path; "" is the backend's default.
	Endpoint string
	// Model is the model id to request; "" takes the server's first.
	Model string
	// APIKeyEnv is the NAME of the environment variable holding the API
	// key ("" none); the key itself is never in the config.
	APIKeyEnv string
	// Headers are extra request headers (never credentials: those go in
	// the environment variable APIKeyEnv names).
	Headers map[string]string
	// SLO is what a good probe meets (the zero SLO: every successful probe
	// is good, so only failures burn the budget).
	SLO stats.SLO
	// Objective is the share of probes that must be good, in (0, 1).
	Objective float64
	// Interval is the time between probes; Timeout bounds one probe.
	Interval, Timeout time.Duration
	// Probe says what each probe asks.
	Probe Probe

	file  string
	index int
	line  int            // the target's own line
	lines map[string]int // each field's line
}

// Probe is what a probe request asks.
type Probe struct {
	// PromptTokens is the length of a synthesized prompt in tokens, fresh
	// text every probe so a prefix cache cannot shorten the prefill; 0
	// when Prompt is set.
	PromptTokens int
	// Prompt is fixed prompt text, sent as it is every probe (a vendor may
	// serve it from its prompt cache); "" to synthesize.
	Prompt string
	// MaxTokens is the output cap (max_tokens), in tokens.
	MaxTokens int
	// ReasoningEffort, when set, is sent as the body's reasoning_effort
	// (e.g. low), so a reasoning model thinks and TTP measures it.
	ReasoningEffort string
	// ExtraBody is merged into every request body (JSON-compatible).
	ExtraBody map[string]any
}

// Body returns the fields the probe adds to a request body: ExtraBody and
// reasoning_effort, nil when there are none. The map is a fresh copy.
func (p Probe) Body() map[string]any {
	if len(p.ExtraBody) == 0 && p.ReasoningEffort == "" {
		return nil
	}
	m := make(map[string]any, len(p.ExtraBody)+1)
	for k, v := range p.ExtraBody {
		m[k] = v
	}
	if p.ReasoningEffort != "" {
		m["reasoning_effort"] = p.ReasoningEffort
	}
	return m
}

// FieldError is err as a mistake in the target's field (a key of its
// mapping, e.g. "backend" or "api_key_env"), naming the file, the field's
// line (the target's when the field was not written) and its path, so a
// check made outside this package (an unknown backend, a variable not
// set) reads like the parser's own.
func (t *Target) FieldError(field string, err error) *setting.FileError {
	line := t.line
	if l, ok := t.lines[field]; ok {
		line = l
	}
	return &setting.FileError{File: t.file, Line: line, Key: fmt.Sprintf("targets[%d].%s", t.index, field), Err: err}
}

// LoadConfig reads and parses the config file at path (see ParseConfig);
// name is how messages call it ("" means path).
func LoadConfig(path, name string) (*Config, error) {
	if name == "" {
		name = path
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &setting.FileError{File: name, Err: err}
	}
	return ParseConfig(data, name)
}

// ParseConfig parses a watch config (YAML). Top-level interval, timeout,
// slo, objective and probe are defaults for every target; a target's own
// keys override them (probe field by field). Unknown keys, duplicate keys
// and bad values are a *setting.FileError naming file, line and field.
// file names the config in messages.
//
//	interval: 30s
//	slo: "ttft:2000 tpot:50"
//	probe: {prompt_tokens: 128, max_tokens: 64}
//	targets:
//	  - name: vendor-a
//	    base_url: https://api.vendor-a.example
//	    backend: openai-chat
//	    model: some-model
//	    api_key_env: VENDOR_A_API_KEY
func ParseConfig(data []byte, file string) (*Config, error) {
	p := &parser{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, setting.YAMLSyntaxError(p.file, err, data)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &setting.FileError{File: file, Key: "targets", Err: errors.New("the file is empty: want a mapping with a list of targets")}
	}
	return p.config(doc.Content[0])
}

// parser walks a YAML node tree, turning every problem into a
// *setting.FileError at the node's line.
type parser struct {
	file   string
	merges int // mappings merged in so far, bounded against alias bombs
}

// maxMerges bounds the mappings merge keys bring in over a whole file:
// aliases let a few lines merge a mapping exponentially many times.
const maxMerges = 1000

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) *setting.FileError {
	return &setting.FileError{File: p.file, Line: n.Line, Key: field, Err: fmt.Errorf(format, args...)}
}

// deref follows aliases (*name) to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// entry is one key of a mapping: its line and its value.
type entry struct {
	line int
	val  *yaml.Node
}

// mapping reads n as a mapping whose keys are all in known: merge keys
// (<<: *defaults) contribute the keys the mapping does not set itself.
func (p *parser) mapping(n *yaml.Node, path string, known []string) (map[string]entry, error) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, path, "want a mapping of %s", strings.Join(known, ", "))
	}
	out := map[string]entry{}
	if err := p.collect(n, path, known, out, false, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// collect adds n's keys to out; merged keys never replace a key set.
func (p *parser) collect(n *yaml.Node, path string, known []string, out map[string]entry, merged bool, depth int) error {
	if depth > 8 {
		return p.errorf(n, path, "merge keys (<<) nested too deep")
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errorf(k, path, "a key must be a plain word")
		}
		if k.Value == "<<" && k.Tag == "!!merge" {
			merges = append(merges, deref(v))
			continue
		}
		field := join(path, k.Value)
		if !slices.Contains(known, k.Value) {
			msg := fmt.Sprintf("unknown field %q", k.Value)
			if s := closest(k.Value, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			} else {
				msg += " (want one of " + strings.Join(known, ", ") + ")"
			}
			return &setting.FileError{File: p.file, Line: k.Line, Key: strings.TrimSuffix(path, "."), Err: errors.New(msg)}
		}
		if _, dup := out[k.Value]; dup {
			if merged {
				continue
			}
			return p.errorf(k, field, "given twice in one mapping")
		}
		out[k.Value] = entry{line: k.Line, val: v}
	}
	for _, m := range merges {
		list := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			list = m.Content
		}
		for _, mm := range list {
			if p.merges++; p.merges > maxMerges {
				return p.errorf(n, path, "more than %d mappings merged (<<): too many", maxMerges)
			}
			mm = deref(mm)
			if mm.Kind != yaml.MappingNode {
				return p.errorf(mm, path, "a merge key (<<) takes a mapping or a list of mappings")
			}
			if err := p.collect(mm, path, known, out, true, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// closest is the known word within two edits of w, if any.
func closest(w string, known []string) string {
	best, bestD := "", 3
	if len(w) > 64 {
		return "" // no known word is near a long one; keep the cost bounded
	}
	for _, k := range known {
		if d := levenshtein.ComputeDistance(strings.ToLower(w), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func (p *parser) str(e entry, field string) (string, error) {
	n := deref(e.val)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errorf(n, field, "want a string")
	}
	return n.Value, nil
}

func (p *parser) duration(e entry, field string) (time.Duration, error) {
	s, err := p.str(e, field)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, p.errorf(deref(e.val), field, "%q is not a duration: want a number with a unit, e.g. 30s or 1m", s)
	}
	if d <= 0 {
		return 0, p.errorf(deref(e.val), field, "%s: want a duration > 0", s)
	}
	return d, nil
}

func (p *parser) count(e entry, field string) (int, error) {
	s, err := p.str(e, field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 1 || v > maxProbeTokens {
		return 0, p.errorf(deref(e.val), field, "%q: want a whole number of tokens from 1 to %d", s, maxProbeTokens)
	}
	return v, nil
}

func (p *parser) objective(e entry, field string) (float64, error) {
	s, err := p.str(e, field)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(v > 0 && v < 1) {
		return 0, p.errorf(deref(e.val), field, "%q: want the share of probes that must be good, between 0 and 1 exclusive, e.g. 0.99", s)
	}
	return v, nil
}

func (p *parser) slo(e entry, field string) (stats.SLO, error) {
	s, err := p.str(e, field)
	if err != nil {
		return stats.SLO{}, err
	}
	slo, err := stats.ParseSLO(s)
	if err != nil {
		return stats.SLO{}, p.errorf(deref(e.val), field, "%v", err)
	}
	return slo, nil
}

// settings are the keys a target inherits from the top level, as set there.
type settings struct {
	interval, timeout *time.Duration
	slo               *stats.SLO
	objective         *float64
	probe             rawProbe
}

// rawProbe is a probe mapping as written: nil fields were not.
type rawProbe struct {
	promptTokens    *int
	prompt          *string
	maxTokens       *int
	reasoningEffort *string
	extraBody       map[string]any
}

// over returns p's fields over base's: a prompt given replaces an
// inherited prompt_tokens and the other way round.
func (p rawProbe) over(base rawProbe) rawProbe {
	out := base
	if p.promptTokens != nil {
		out.promptTokens, out.prompt = p.promptTokens, nil
	}
	if p.prompt != nil {
		out.prompt, out.promptTokens = p.prompt, nil
	}
	if p.maxTokens != nil {
		out.maxTokens = p.maxTokens
	}
	if p.reasoningEffort != nil {
		out.reasoningEffort = p.reasoningEffort
	}
	if p.extraBody != nil {
		out.extraBody = p.extraBody
	}
	return out
}

var (
	topKeys    = []string{"interval", "timeout", "slo", "objective", "probe", "targets"}
	targetKeys = []string{"name", "base_url", "backend", "endpoint", "model", "api_key_env", "headers", "slo", "objective", "interval", "timeout", "probe"}
	probeKeys  = []string{"prompt_tokens", "prompt", "max_tokens", "reasoning_effort", "extra_body"}
)

// settings reads the keys shared by the top level and a target.
func (p *parser) settings(m map[string]entry, path string) (settings, error) {
	var s settings
	var err error
	if e, ok := m["interval"]; ok {
		d, err := p.duration(e, join(path, "interval"))
		if err != nil {
			return s, err
		}
		s.interval = &d
	}
	if e, ok := m["timeout"]; ok {
		d, err := p.duration(e, join(path, "timeout"))
		if err != nil {
			return s, err
		}
		s.timeout = &d
	}
	if e, ok := m["slo"]; ok {
		slo, err := p.slo(e, join(path, "slo"))
		if err != nil {
			return s, err
		}
		s.slo = &slo
	}
	if e, ok := m["objective"]; ok {
		v, err := p.objective(e, join(path, "objective"))
		if err != nil {
			return s, err
		}
		s.objective = &v
	}
	if e, ok := m["probe"]; ok {
		if s.probe, err = p.probe(e, join(path, "probe")); err != nil {
			return s, err
		}
	}
	return s, nil
}

// reservedBody are request fields the backend writes itself: extra_body
// may not replace the probe's prompt, model or streaming.
var reservedBody = []string{"model", "prompt", "messages", "stream"}

// reasoningWord is a reasoning_effort value: a word such as low or high.
var reasoningWord = regexp.MustCompile(`^[a-z][a-z_-]{0,31}$`)

func (p *parser) probe(e entry, path string) (rawProbe, error) {
	var r rawProbe
	m, err := p.mapping(e.val, path, probeKeys)
	if err != nil {
		return r, err
	}
	if e, ok := m["prompt_tokens"]; ok {
		v, err := p.count(e, join(path, "prompt_tokens"))
		if err != nil {
			return r, err
		}
		r.promptTokens = &v
	}
	if e, ok := m["prompt"]; ok {
		v, err := p.str(e, join(path, "prompt"))
		if err != nil {
			return r, err
		}
		if strings.TrimSpace(v) == "" {
			return r, p.errorf(deref(e.val), join(path, "prompt"), "empty: want the prompt text, or prompt_tokens to synthesize one")
		}
		if r.promptTokens != nil {
			return r, p.errorf(deref(e.val), join(path, "prompt"), "give prompt or prompt_tokens, not both")
		}
		r.prompt = &v
	}
	if e, ok := m["max_tokens"]; ok {
		v, err := p.count(e, join(path, "max_tokens"))
		if err != nil {
			return r, err
		}
		r.maxTokens = &v
	}
	if e, ok := m["reasoning_effort"]; ok {
		v, err := p.str(e, join(path, "reasoning_effort"))
		if err != nil {
			return r, err
		}
		if !reasoningWord.MatchString(v) {
			return r, p.errorf(deref(e.val), join(path, "reasoning_effort"), "%q: want a word such as low, medium or high", v)
		}
		r.reasoningEffort = &v
	}
	if e, ok := m["extra_body"]; ok {
		field := join(path, "extra_body")
		n := deref(e.val)
		if n.Kind != yaml.MappingNode {
			return r, p.errorf(n, field, "want a mapping of request body fields")
		}
		var body map[string]any
		if err := n.Decode(&body); err != nil {
			return r, p.errorf(n, field, "%v", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if _, err := json.Marshal(body); err != nil {
			return r, p.errorf(n, field, "not expressible as JSON (keys must be strings): %v", err)
		}
		for _, k := range reservedBody {
			if _, ok := body[k]; ok {
				return r, p.errorf(n, field, "%q is the probe's own (set by the backend); leave it out", k)
			}
		}
		if body == nil {
			body = map[string]any{}
		}
		r.extraBody = body
	}
	return r, nil
}

var (
	// targetName is what may label a metric and name a file.
	targetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// envName is a portable environment variable name.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	// headerName is an HTTP field name (RFC 9110 token).
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
)

// credentialHeaders carry keys: the key belongs in the environment, so
// the config file can be shared, committed and printed.
var credentialHeaders = []string{"authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key", "cookie"}

func (p *parser) config(root *yaml.Node) (*Config, error) {
	top, err := p.mapping(root, "", topKeys)
	if err != nil {
		return nil, err
	}
	global, err := p.settings(top, "")
	if err != nil {
		return nil, err
	}
	te, ok := top["targets"]
	if !ok {
		return nil, &setting.FileError{File: p.file, Line: deref(root).Line, Key: "targets", Err: errors.New("missing: want a list of targets to probe")}
	}
	list := deref(te.val)
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return nil, p.errorf(list, "targets", "want a non-empty list of targets (each a mapping with name and base_url)")
	}
	cfg := &Config{File: p.file}
	names := map[string]int{}
	for i, n := range list.Content {
		t, err := p.target(n, i, global)
		if err != nil {
			return nil, err
		}
		if j, dup := names[t.Name]; dup {
			return nil, t.FieldError("name", fmt.Errorf("%q is also targets[%d]'s: names label metrics and name files, so each must be unique", t.Name, j))
		}
		names[t.Name] = i
		cfg.Targets = append(cfg.Targets, t)
	}
	return cfg, nil
}

func (p *parser) target(n *yaml.Node, i int, global settings) (Target, error) {
	path := fmt.Sprintf("targets[%d]", i)
	n = deref(n)
	t := Target{file: p.file, index: i, line: n.Line, lines: map[string]int{}}
	m, err := p.mapping(n, path, targetKeys)
	if err != nil {
		return t, err
	}
	for k, e := range m {
		t.lines[k] = e.line
	}
	str := func(key string) (string, bool, error) {
		e, ok := m[key]
		if !ok {
			return "", false, nil
		}
		s, err := p.str(e, join(path, key))
		return s, true, err
	}
	var given bool
	if t.Name, given, err = str("name"); err != nil {
		return t, err
	} else if !given {
		return t, t.FieldError("name", errors.New("missing: every target needs a name (it labels the metrics as vendor)"))
	}
	if !targetName.MatchString(t.Name) {
		return t, t.FieldError("name", fmt.Errorf("%q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (it labels metrics and names a file)", t.Name))
	}
	if t.BaseURL, given, err = str("base_url"); err != nil {
		return t, err
	} else if !given {
		return t, t.FieldError("base_url", errors.New("missing: want the API's root URL, e.g. https://api.example.com, or embedded"))
	}
	if err := checkBaseURL(t.BaseURL); err != nil {
		return t, t.FieldError("base_url", err)
	}
	if t.Backend, given, err = str("backend"); err != nil {
		return t, err
	}
	t.Backend = strings.TrimSpace(t.Backend)
	if !given || t.Backend == "" {
		t.Backend = DefaultBackend
	}
	if t.Endpoint, _, err = str("endpoint"); err != nil {
		return t, err
	}
	if t.Endpoint != "" && !strings.HasPrefix(t.Endpoint, "/") {
		return t, t.FieldError("endpoint", fmt.Errorf("%q: want a request path starting with /", t.Endpoint))
	}
	if t.Model, _, err = str("model"); err != nil {
		return t, err
	}
	if t.APIKeyEnv, given, err = str("api_key_env"); err != nil {
		return t, err
	}
	// The value is never echoed: if it is not a name, it may be the key.
	if given && !envName.MatchString(t.APIKeyEnv) {
		return t, t.FieldError("api_key_env", errors.New("want the NAME of the environment variable that holds the key (letters, digits and _), never the key itself"))
	}
	if e, ok := m["headers"]; ok {
		if t.Headers, err = p.headers(e, join(path, "headers")); err != nil {
			return t, err
		}
	}
	own, err := p.settings(m, path)
	if err != nil {
		return t, err
	}
	t.Interval = pick(own.interval, global.interval, DefaultInterval)
	t.Timeout = pick(own.timeout, global.timeout, min(t.Interval, DefaultMaxTimeout))
	t.SLO = pick(own.slo, global.slo, stats.SLO{})
	t.Objective = pick(own.objective, global.objective, DefaultObjective)
	pr := own.probe.over(global.probe)
	t.Probe = Probe{
		PromptTokens: pick(pr.promptTokens, nil, DefaultPromptTokens),
		MaxTokens:    pick(pr.maxTokens, nil, DefaultMaxTokens),
		ExtraBody:    pr.extraBody,
	}
	if pr.prompt != nil {
		t.Probe.Prompt, t.Probe.PromptTokens = *pr.prompt, 0
	}
	if pr.reasoningEffort != nil {
		t.Probe.ReasoningEffort = *pr.reasoningEffort
	}
	return t, nil
}

// pick is the first of own, global that is set, else def.
func pick[T any](own, global *T, def T) T {
	switch {
	case own != nil:
		return *own
	case global != nil:
		return *global
	}
	return def
}

func checkBaseURL(raw string) error {
	if raw == Embedded {
		return nil
	}
	// Messages show the URL without user info or key-like query values.
	shown := redact.URLString(raw)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http(s) URL such as https://api.example.com, or embedded", shown)
	}
	if u.User != nil {
		return fmt.Errorf("%q: no user or password in the URL: put the key in the variable api_key_env names", shown)
	}
	return nil
}

func (p *parser) headers(e entry, path string) (map[string]string, error) {
	n := deref(e.val)
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, path, "want a mapping of header names to values")
	}
	h := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || !headerName.MatchString(k.Value) {
			return nil, p.errorf(k, path, "%q is not an HTTP header name", k.Value)
		}
		field := join(path, k.Value)
		if slices.Contains(credentialHeaders, strings.ToLower(k.Value)) {
			return nil, p.errorf(k, field, "a credential header: put the key in an environment variable and name it with api_key_env, so the file holds no secret")
		}
		for name := range h {
			if strings.EqualFold(name, k.Value) {
				return nil, p.errorf(k, field, "given twice")
			}
		}
		// Values are never echoed: goodput cannot tell which are secrets.
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			return nil, p.errorf(v, field, "want a string value")
		}
		if strings.ContainsFunc(v.Value, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			return nil, p.errorf(v, field, "the value holds a control character (a line break?)")
		}
		h[k.Value] = v.Value
	}
	return h, nil
}
