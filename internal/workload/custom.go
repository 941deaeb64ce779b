package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/goodput/goodput/internal/tokenize"
)

// Custom is a dataset of prompts given in a JSON Lines file, one request per
// line, either
//
//	{"prompt": "text", "output_tokens": 128}
//	{"messages": [{"role": "user", "content": "text"}], "output_tokens": 128}
//
// output_tokens is optional (0 leaves the length to the server); other
// fields are ignored and blank lines skipped. PromptTokens is the prompt's
// count by the dataset's tokenizer; for messages it is the sum over
// contents, without the chat template's overhead.
type Custom struct {
	name string
	reqs []Request
}

var _ Dataset = (*Custom)(nil)

type customLine struct {
	Prompt   *string `json:"prompt"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	OutputTokens json.RawMessage `json:"output_tokens"`
}

// LoadCustom reads a custom JSONL file; tok counts prompt tokens (nil means
// tokenize.Approx). Errors name the file and line.
func LoadCustom(path string, tok tokenize.Tokenizer) (*Custom, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCustom(f, path, tok)
}

// ReadCustom reads custom JSONL from r; file names r in errors and the
// dataset's name.
func ReadCustom(r io.Reader, file string, tok tokenize.Tokenizer) (*Custom, error) {
	if tok == nil {
		tok = tokenize.Approx{}
	}
	d := &Custom{name: "custom:" + filepath.Base(file)}
	err := eachLine(r, file, func(line int, b []byte) error {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return nil
		}
		var c customLine
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("%s:%d: %w", file, line, jsonError(err))
		}
		req := Request{Index: len(d.reqs)}
		switch {
		case c.Prompt != nil && c.Messages != nil:
			return fmt.Errorf("%s:%d: both \"prompt\" and \"messages\"; give one", file, line)
		case c.Prompt != nil:
			req.Prompt = *c.Prompt
			req.PromptTokens = tok.Count(req.Prompt)
		case len(c.Messages) > 0:
			for k, m := range c.Messages {
				if m.Role == "" {
					return fmt.Errorf("%s:%d: message %d has no \"role\"", file, line, k+1)
				}
				req.Messages = append(req.Messages, Message{Role: m.Role, Content: m.Content})
				// Message contents are parts of one prompt: the template's
				// special tokens are not counted per message.
				req.PromptTokens += tokenize.CountText(tok, m.Content)
			}
		default:
			return fmt.Errorf("%s:%d: no \"prompt\" or \"messages\"", file, line)
		}
		if c.OutputTokens != nil && string(c.OutputTokens) != "null" {
			n, err := strconv.ParseInt(string(c.OutputTokens), 10, 32)
			if err != nil || n < 0 {
				return fmt.Errorf("%s:%d: \"output_tokens\" %s is not a non-negative integer", file, line, c.OutputTokens)
			}
			req.OutputTokens = int(n)
		}
		d.reqs = append(d.reqs, req)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(d.reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests in file", file)
	}
	return d, nil
}

// Name returns "custom:" and the file's base name.
func (d *Custom) Name() string { return d.name }

// Len returns the number of requests in the file.
func (d *Custom) Len() int { return len(d.reqs) }

// Shape returns request i without text.
func (d *Custom) Shape(i int) Request {
	r := d.reqs[i]
	r.Prompt, r.Messages = "", nil
	return r
}

// Request returns request i as given in the file.
func (d *Custom) Request(i int) Request {
	r := d.reqs[i]
	r.Messages = append([]Message(nil), r.Messages...)
	return r
}

// eachLine calls fn with each line of r (1-based number, without the line
// end, CRLF or LF; a final line without a newline counts). A UTF-8 byte order
// mark at the start is dropped.
func eachLine(r io.Reader, file string, fn func(line int, b []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if len(b) == 0 && err != nil {
			return nil
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if ferr := fn(line, b); ferr != nil {
			return ferr
		}
		if err != nil {
			return nil
		}
	}
}

// jsonError shortens encoding/json's messages to what a user can act on.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}
