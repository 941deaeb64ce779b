// Package openai speaks the OpenAI-compatible HTTP APIs that vLLM, SGLang,
// TGI, llama.cpp, Ollama and commercial APIs serve: completions, chat
// completions, Responses and embeddings, as wire.Protocols whose decoders
// read their chunks and whole answers. The client that sends them, times
// them and classifies their failures is package wire's, shared by every
// protocol.
package openai

import "github.com/goodput/goodput/internal/wire"

// NewClient is wire.NewClient speaking the OpenAI protocol cfg.Endpoint
// implies (ProtocolFor) when cfg names none: the form every caller that
// gives only a path uses.
func NewClient(cfg wire.Config) (*wire.Client, error) {
	if cfg.Protocol == nil {
		cfg.Protocol = ProtocolFor(cfg.Endpoint)
	}
	return wire.NewClient(cfg)
}
