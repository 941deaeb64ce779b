package tokenize

import (
	"encoding/json"
	"errors"
	"fmt"
)

// hfProcessor is a tokenizer.json post_processor: the union of the fields
// of the types this package reads (TemplateProcessing, BertProcessing,
// RobertaProcessing, ByteLevel and Sequence).
type hfProcessor struct {
	Type string `json:"type"`
	// TemplateProcessing: the template of a single sequence and the ids of
	// the special tokens it names. The pair template is not read: a prompt
	// is one sequence.
	Single        []hfTemplatePiece                 `json:"single"`
	SpecialTokens map[string]hfTemplateSpecialToken `json:"special_tokens"`
	// BertProcessing and RobertaProcessing: [token, id].
	Sep json.RawMessage `json:"sep"`
	Cls json.RawMessage `json:"cls"`
	// Sequence.
	Processors []hfProcessor `json:"processors"`
}

// hfTemplatePiece is one element of a template: a special token (by its
// key in special_tokens) or the input sequence "A" (or "B" for a pair).
type hfTemplatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

// hfTemplateSpecialToken is an entry of special_tokens; one entry may stand
// for several ids.
type hfTemplateSpecialToken struct {
	IDs []int `json:"ids"`
}

// template is what a post-processor adds around the ids of a single
// sequence (add_special_tokens=True in Hugging Face and vLLM).
type template struct {
	pre, post []int
}

// len returns the number of special tokens the template adds.
func (tp template) len() int { return len(tp.pre) + len(tp.post) }

// maxTemplateTokens bounds the special tokens a template may add; real
// ones add one to three.
const maxTemplateTokens = 1024

// parseProcessor returns the template p adds to a single sequence; a nil p
// adds nothing.
func parseProcessor(p *hfProcessor) (template, error) {
	tp, err := p.template(0)
	if err != nil {
		return template{}, fmt.Errorf("tokenizer.json: post_processor %w", err)
	}
	if tp.len() > maxTemplateTokens {
		return template{}, fmt.Errorf("tokenizer.json: post_processor adds %d special tokens (more than %d)", tp.len(), maxTemplateTokens)
	}
	return tp, nil
}

func (p *hfProcessor) template(depth int) (template, error) {
	if p == nil {
		return template{}, nil
	}
	if depth > 8 {
		return template{}, errors.New("post_processor Sequence nested too deep")
	}
	switch p.Type {
	case "ByteLevel":
		// Trims offsets only; adds no token.
		return template{}, nil
	case "TemplateProcessing":
		return p.singleTemplate()
	case "BertProcessing", "RobertaProcessing":
		// Both make a single sequence "cls A sep".
		cls, err := tokenPair(p.Cls)
		if err != nil {
			return template{}, fmt.Errorf("%s cls: %w", p.Type, err)
		}
		sep, err := tokenPair(p.Sep)
		if err != nil {
			return template{}, fmt.Errorf("%s sep: %w", p.Type, err)
		}
		return template{pre: []int{cls}, post: []int{sep}}, nil
	case "Sequence":
		// Each processor wraps what the ones before it made.
		var tp template
		for i := range p.Processors {
			inner, err := p.Processors[i].template(depth + 1)
			if err != nil {
				return template{}, fmt.Errorf("post_processor Sequence %d: %w", i, err)
			}
			tp.pre = append(inner.pre, tp.pre...)
			tp.post = append(tp.post, inner.post...)
			if tp.len() > maxTemplateTokens {
				return tp, nil // parseProcessor says so
			}
		}
		return tp, nil
	}
	return template{}, fmt.Errorf("%q is not supported (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel and Sequence are)", p.Type)
}

// singleTemplate reads TemplateProcessing's single template: special tokens
// before and after one $A.
func (p *hfProcessor) singleTemplate() (template, error) {
	var tp template
	seen := false
	for i, piece := range p.Single {
		switch {
		case piece.Sequence != nil && piece.SpecialToken == nil:
			if piece.Sequence.ID != "A" || seen {
				return template{}, fmt.Errorf("TemplateProcessing single: piece %d: want $A exactly once (got Sequence %q)", i, piece.Sequence.ID)
			}
			seen = true
		case piece.SpecialToken != nil && piece.Sequence == nil:
			st, ok := p.SpecialTokens[piece.SpecialToken.ID]
			if !ok {
				return template{}, fmt.Errorf("TemplateProcessing single: special token %q is not in special_tokens", piece.SpecialToken.ID)
			}
			if seen {
				tp.post = append(tp.post, st.IDs...)
			} else {
				tp.pre = append(tp.pre, st.IDs...)
			}
			if tp.len() > maxTemplateTokens {
				return tp, nil // parseProcessor says so
			}
		default:
			return template{}, fmt.Errorf("TemplateProcessing single: piece %d: want one of SpecialToken or Sequence", i)
		}
	}
	if !seen {
		return template{}, errors.New("TemplateProcessing single: no $A (Sequence A)")
	}
	return tp, nil
}

// tokenPair reads BertProcessing's ["[SEP]", 102] and returns the id.
func tokenPair(raw json.RawMessage) (int, error) {
	var pair []json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		return 0, errors.New(`want ["token", id]`)
	}
	var s string
	var id int
	if json.Unmarshal(pair[0], &s) != nil || json.Unmarshal(pair[1], &id) != nil {
		return 0, errors.New(`want ["token", id]`)
	}
	return id, nil
}
