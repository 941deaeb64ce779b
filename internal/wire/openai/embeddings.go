package openai

import (
	"net/http"

	"github.com/goodput/goodput/internal/jsonscan"
	"github.com/goodput/goodput/internal/wire"
)

// Embeddings is POST /v1/embeddings: one input per request, answered whole
// with its vectors. Nothing is generated, so a record has no TTFT or TPOT:
// its latency is the answer's (E2E), its throughput inputs and prompt
// tokens per second.
var Embeddings wire.Protocol = embeddingsProtocol{}

type embeddingsProtocol struct{}

func (embeddingsProtocol) Name() string                   { return "openai-embeddings" }
func (embeddingsProtocol) Path() string                   { return "/v1/embeddings" }
func (embeddingsProtocol) Chat() bool                     { return false }
func (embeddingsProtocol) Streams() bool                  { return false }
func (embeddingsProtocol) Auth(h http.Header, key string) { wire.BearerAuth(h, key) }
func (embeddingsProtocol) NewDecoder() wire.EventDecoder  { return &EmbeddingsDecoder{} }
func (embeddingsProtocol) Body(m map[string]any, r *wire.Request, _ wire.BodyOptions) error {
	input := r.Prompt
	if input == "" {
		// A conversation's text, when the workload gave messages.
		for _, msg := range r.Messages {
			input += msg.Content
		}
	}
	m["input"] = input
	m["encoding_format"] = "float"
	return nil
}

// EmbeddingsDecoder reads an embeddings answer: the number of vectors in
// "data" and usage.prompt_tokens, skipping the vectors themselves without
// decoding a float.
type EmbeddingsDecoder struct {
	p jsonscan.Scanner
}

// Reset implements EventDecoder.
func (d *EmbeddingsDecoder) Reset() {}

// Decode implements EventDecoder: an embeddings answer is never streamed,
// so an event is read as a whole answer.
func (d *EmbeddingsDecoder) Decode(data []byte, c *wire.Chunk) error {
	return d.DecodeResponse(data, c)
}

// DecodeResponse reads a whole embeddings answer into c: Inputs is the
// number of vectors, Usage.PromptTokens the tokens embedded; an "error"
// member is an error answer.
func (d *EmbeddingsDecoder) DecodeResponse(data []byte, c *wire.Chunk) error {
	*c = wire.Chunk{Timing: noTiming}
	p := &d.p
	var errMsg jsonscan.Span
	isErr := false
	err := p.Document(data, func(k []byte) (err error) {
		switch string(k) {
		case "data":
			if p.Peek() != '[' {
				return p.Skip()
			}
			more, err := p.OpenArray()
			for ; more && err == nil; more, err = p.NextElement() {
				if err = p.Skip(); err != nil {
					return err
				}
				c.Inputs++
			}
			return err
		case "usage":
			c.Usage.Present, err = p.Members(func(k []byte) (err error) {
				if string(k) == "prompt_tokens" {
					c.Usage.PromptTokens, err = p.Count(wire.MaxUsageTokens)
					return err
				}
				return p.Skip()
			})
			return err
		case "error":
			switch p.Peek() {
			case '"':
				isErr = true
				errMsg, _, err = p.Str()
				return err
			case '{':
				isErr = true
				_, err = p.Members(func(k []byte) (err error) {
					if string(k) == "message" {
						errMsg, _, err = p.Str()
						return err
					}
					return p.Skip()
				})
				return err
			}
			return p.Skip()
		}
		return p.Skip()
	})
	if err != nil {
		return err
	}
	if isErr {
		c.ErrMessage = p.Bytes(errMsg)
		if len(c.ErrMessage) == 0 {
			c.ErrMessage = unknownError
		}
		c.Inputs = 0
	}
	return nil
}
