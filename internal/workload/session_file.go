package workload

import (
	"strings"

	"github.com/goodput/goodput/internal/tokenize"
)

// SessionFile is a file of sessions to read, and how.
type SessionFile struct {
	// Path is the file: a Mooncake conversation trace when Mooncake, else
	// goodput's session JSONL when it ends in .jsonl, else ShareGPT JSON.
	Path     string
	Mooncake bool
	// NumSessions caps the sessions (0: all); Seed and NoShuffle say how
	// ShareGPT conversations are drawn; Tokenizer counts the tokens of
	// the JSONL and ShareGPT texts (nil: approximate).
	NumSessions int
	Seed        int64
	NoShuffle   bool
	Tokenizer   tokenize.Tokenizer
}

// LoadSessionFile reads the sessions of f in its format.
func LoadSessionFile(f SessionFile) (*Sessions, error) {
	switch {
	case f.Mooncake:
		s, _, err := LoadMooncakeSessions(f.Path, MooncakeSessionsConfig{NumSessions: f.NumSessions})
		return s, err
	case strings.HasSuffix(strings.ToLower(f.Path), ".jsonl"):
		return LoadSessionsJSONL(f.Path, SessionJSONLConfig{NumSessions: f.NumSessions, Tokenizer: f.Tokenizer})
	}
	return LoadShareGPTSessions(f.Path, ShareGPTSessionsConfig{NumSessions: f.NumSessions, Seed: f.Seed, NoShuffle: f.NoShuffle, Tokenizer: f.Tokenizer})
}
