// Package protocols is the one table of goodput's wire protocols: for
// each, the name --backend takes (and its aliases), the request path that
// is also its route label, the environment variable its key is read from,
// and the client side (body, auth, event decoder) as a wire protocol. The
// bench client's target, the proxy's decoder choice, the Prometheus route
// labels, the simulator's server mux and the CLI help all read it, so a
// new protocol is its own package, one entry here and its simulated
// server side.
//
// The table is fixed at init and safe for concurrent use.
package protocols

import (
	"slices"
	"strings"

	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/anthropic"
	"github.com/goodput/goodput/internal/wire/openai"
)

// Protocol is one wire protocol as every part of goodput names it.
type Protocol struct {
	// Wire is the client side: body, key header, decoder, whether it
	// streams. Its Name is the protocol's and its Path the route.
	Wire wire.Protocol
	// Aliases are other names --backend accepts (vLLM's for openai).
	Aliases []string
	// Note says in help what the name alone does not ("" for nothing).
	Note string
	// KeyEnv is the environment variable the API key is read from when
	// the user names none.
	KeyEnv string
}

// Name is the protocol's canonical name, as --backend takes it and
// records name the API.
func (p Protocol) Name() string { return p.Wire.Name() }

// Route is the protocol's request path and its route label in metrics.
func (p Protocol) Route() string { return p.Wire.Path() }

// suffix is the part of Route a gateway's prefix cannot change: the path
// after its version (/v1).
func (p Protocol) suffix() string {
	r := p.Route()
	if i := strings.Index(r[1:], "/"); i >= 0 && strings.HasPrefix(r, "/v") {
		return r[i+1:]
	}
	return r
}

// The key environment variables of the protocols here.
const (
	openaiKey    = "OPENAI_API_KEY"
	anthropicKey = "ANTHROPIC_API_KEY" // as Anthropic's own tools read it
)

// table is every protocol, in the order help lists them. Every
// OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, Ollama) speaks
// openai or openai-chat; a server's name would say nothing more than its
// API, so it is not one.
var table = []Protocol{
	{Wire: openai.Completions, Aliases: []string{"vllm"}, Note: "completions", KeyEnv: openaiKey},
	{Wire: openai.ChatCompletions, KeyEnv: openaiKey},
	{Wire: openai.Responses, KeyEnv: openaiKey},
	{Wire: anthropic.Messages, KeyEnv: anthropicKey},
	{Wire: openai.Embeddings, KeyEnv: openaiKey},
}

// All is every protocol, in the order help lists them. The slice is the
// caller's.
func All() []Protocol { return slices.Clone(table) }

// Lookup is the protocol a name or alias names, in any case and with
// surrounding space.
func Lookup(name string) (Protocol, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, p := range table {
		if p.Name() == name || slices.Contains(p.Aliases, name) {
			return p, true
		}
	}
	return Protocol{}, false
}

// Names is every name and alias accepted, sorted (a tie in a "did you
// mean" goes the same way every time).
func Names() []string {
	var out []string
	for _, p := range table {
		out = append(out, p.Name())
		out = append(out, p.Aliases...)
	}
	slices.Sort(out)
	return out
}

// Help lists the accepted names for help and errors: "openai
// (completions; vllm is its alias), openai-chat, ... or openai-embeddings".
func Help() string {
	var b strings.Builder
	for i, p := range table {
		switch {
		case i == 0:
		case i == len(table)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(p.Name())
		var notes []string
		if p.Note != "" {
			notes = append(notes, p.Note)
		}
		for _, a := range p.Aliases {
			notes = append(notes, a+" is its alias")
		}
		if len(notes) > 0 {
			b.WriteString(" (" + strings.Join(notes, "; ") + ")")
		}
	}
	return b.String()
}

// OfPath is the protocol a request path is sent to, and whether one is. A
// path ending in a protocol's route after its version (/chat/completions
// for /v1/chat/completions) counts as that protocol whatever prefix a
// gateway puts in front (/openai/v1/chat/completions); the longest such
// ending wins, so chat completions is not taken for completions.
func OfPath(path string) (Protocol, bool) {
	path = strings.TrimRight(path, "/")
	best, found := Protocol{}, false
	for _, p := range table {
		if s := p.suffix(); strings.HasSuffix(path, s) && (!found || len(s) > len(best.suffix())) {
			best, found = p, true
		}
	}
	return best, found
}

// Default is the protocol a path of none of them is read as: OpenAI's
// completions, whose chunk format every OpenAI-compatible stream shares.
func Default() Protocol { return table[0] }
