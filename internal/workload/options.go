package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/tokenize"
)

// Options mirrors the workload flags of goodput bench, sim and sweep (named
// as in vllm bench serve where the concept is the same). Zero values mean
// the flag's default.
type Options struct {
	// Sampling orders and bounds the rows of sharegpt and lengths files.
	Sampling
	// DatasetName is --dataset-name: random (default), custom, sharegpt,
	// lengths, trace or prefix-repetition.
	DatasetName string
	// DatasetPath is --dataset-path, the file for custom, sharegpt, lengths
	// and trace.
	DatasetPath string
	// NumPrompts is --num-prompts: the number of distinct requests (default
	// 1000 for random and prefix-repetition; for the file datasets 0 means
	// every row, and for traces it caps the requests replayed).
	NumPrompts int
	// Seed is --seed.
	Seed int64

	// RandomInputLen, RandomOutputLen, RandomRangeRatio and RandomPrefixLen
	// are --random-input-len (tokens, default 1024), --random-output-len
	// (tokens, default 128), --random-range-ratio and --random-prefix-len
	// (tokens).
	RandomInputLen, RandomOutputLen int
	RandomRangeRatio                float64
	RandomPrefixLen                 int
	// InputLenDist and OutputLenDist are --input-len-dist and
	// --output-len-dist (see ParseDist); they override the random lengths.
	InputLenDist, OutputLenDist string

	// ShareGPTOutputLen is --sharegpt-output-len (tokens; 0 = the reply's).
	ShareGPTOutputLen int

	// PrefixRepetition* are --prefix-repetition-prefix-len, -suffix-len,
	// -num-prefixes and -output-len (tokens; defaults 256, 256, 10, 128 as
	// in vLLM).
	PrefixRepetitionPrefixLen, PrefixRepetitionSuffixLen   int
	PrefixRepetitionNumPrefixes, PrefixRepetitionOutputLen int

	// SharedPrefixLen and NumPrefixes are --shared-prefix-len (tokens) and
	// --num-prefixes (default 1): shared system prompts before every prompt.
	SharedPrefixLen, NumPrefixes int
	// CacheBust is --cache-bust: a unique random prefix on every prompt.
	CacheBust bool

	// TraceSpeedup is --trace-speedup (default 1); TraceWindow is
	// --trace-window START:END in seconds of trace time from its first
	// arrival (END may be empty for the end of the trace).
	TraceSpeedup float64
	TraceWindow  string

	// Tokenizer is --tokenizer: "" or "approx", "tiktoken:o200k_base",
	// "tiktoken:cl100k_base", or the path of a Hugging Face tokenizer.json
	// (or of its directory). Tok, when set, is used instead (already loaded).
	Tokenizer string
	Tok       tokenize.Tokenizer
	// Calibration maps the prompt lengths asked for to the lengths written,
	// so that the server counts what was asked (fitted by the caller from
	// the server's /tokenize or probe requests); zero means none.
	Calibration tokenize.Calibration
}

// Defaults of vllm bench serve.
const (
	defaultNumPrompts      = 1000
	defaultRandomInputLen  = 1024
	defaultRandomOutputLen = 128
)

// OptionError is a bad value in Options: Field is the Go name of the field
// at fault ("RandomInputLen", "DatasetPath", …), so that a caller can say
// where the value came from (the CLI names the flag).
type OptionError struct {
	// Field is the Options field's Go name.
	Field string
	// Value is the field's value as given, or nil where the message needs
	// none (a missing path, a tokenizer that failed to load).
	Value any
	// Err says what is wrong with it.
	Err error
}

// Error describes the field in words, its value and the problem, e.g.
// "random input length -1: must not be negative".
func (e *OptionError) Error() string {
	name, ok := optionNames[e.Field]
	if !ok {
		name = e.Field
	}
	if v := e.ValueText(); v != "" {
		name += " " + v
	}
	return name + ": " + e.Err.Error()
}

func (e *OptionError) Unwrap() error { return e.Err }

// As reads the error as a *setting.Error on the same field, so that a
// caller naming settings by field path (the command line: by the flag bound
// to it) renders it without a table of its own.
func (e *OptionError) As(target any) bool {
	p, ok := target.(**setting.Error)
	if ok {
		*p = setting.Errorf(e.Field, e.ValueText(), "%v", e.Err)
	}
	return ok
}

// ValueText is Value as Error writes it: a string quoted, a number as %v;
// "" when Value is nil.
func (e *OptionError) ValueText() string {
	switch v := e.Value.(type) {
	case nil:
		return ""
	case string:
		return fmt.Sprintf("%q", v)
	case []string:
		return fmt.Sprintf("%q", strings.Join(v, ","))
	default:
		return fmt.Sprint(v)
	}
}

// optionNames are the fields' names in words, for OptionError.Error.
var optionNames = map[string]string{
	"DatasetName":                 "dataset name",
	"DatasetPath":                 "dataset path",
	"NumPrompts":                  "number of prompts",
	"RandomInputLen":              "random input length",
	"RandomOutputLen":             "random output length",
	"RandomRangeRatio":            "random range ratio",
	"RandomPrefixLen":             "random prefix length",
	"InputLenDist":                "input length distribution",
	"OutputLenDist":               "output length distribution",
	"PrefixRepetitionPrefixLen":   "prefix-repetition prefix length",
	"PrefixRepetitionSuffixLen":   "prefix-repetition suffix length",
	"PrefixRepetitionNumPrefixes": "prefix-repetition number of prefixes",
	"PrefixRepetitionOutputLen":   "prefix-repetition output length",
	"SharedPrefixLen":             "shared prefix length",
	"NumPrefixes":                 "number of prefixes",
	"CacheBust":                   "cache bust",
	"TraceSpeedup":                "trace speedup",
	"TraceWindow":                 "trace window",
	"Tokenizer":                   "tokenizer",
}

// optionErr is an *OptionError with a formatted message.
func optionErr(field string, value any, format string, args ...any) error {
	return &OptionError{Field: field, Value: value, Err: fmt.Errorf(format, args...)}
}

// FromOptions builds the dataset the flags describe. An error in a value
// is an *OptionError naming the field; one in a file names the file and
// line.
func FromOptions(o Options) (Dataset, error) {
	tok := o.Tok
	if tok == nil {
		var err error
		if tok, err = tokenize.Load(o.Tokenizer); err != nil {
			return nil, &OptionError{Field: "Tokenizer", Err: err}
		}
	}
	synth, err := tokenize.NewSynthesizer(tok)
	if err != nil {
		return nil, &OptionError{Field: "Tokenizer", Err: err}
	}
	if !o.Calibration.IsZero() {
		synth = synth.WithCalibration(o.Calibration)
	}
	if o.NumPrompts < 0 {
		return nil, optionErr("NumPrompts", o.NumPrompts, "must not be negative")
	}
	name := strings.ToLower(o.DatasetName)
	if name == "" {
		name = "random"
	}
	needPath := func() error {
		if o.DatasetPath == "" {
			return optionErr("DatasetPath", nil, "required for the %s dataset", name)
		}
		return nil
	}
	var ds Dataset
	switch name {
	case "random":
		ds, err = randomFromOptions(o, synth)
	case "custom":
		if err = needPath(); err == nil {
			var c *Custom
			if c, err = LoadCustom(o.DatasetPath, tok); err == nil {
				ds = limit(c, o.NumPrompts)
			}
		}
	case "sharegpt":
		if err = needPath(); err == nil {
			ds, err = LoadShareGPT(o.DatasetPath, ShareGPTConfig{Sampling: o.Sampling, NumPrompts: o.NumPrompts, Seed: o.Seed, OutputLen: o.ShareGPTOutputLen, Tokenizer: tok})
		}
	case "lengths":
		if err = needPath(); err == nil {
			ds, err = LoadLengths(o.DatasetPath, LengthsConfig{Sampling: o.Sampling, NumPrompts: o.NumPrompts, Seed: o.Seed, Synth: synth})
		}
	case "trace":
		if err = needPath(); err == nil {
			var to TraceOptions
			if to, err = traceOptions(o); err == nil {
				to.Seed, to.Synth, to.MaxRequests = o.Seed, synth, o.NumPrompts
				ds, err = LoadTrace(o.DatasetPath, to)
			}
		}
	case "prefix-repetition":
		for _, f := range []struct {
			field string
			v     int
		}{
			{"PrefixRepetitionPrefixLen", o.PrefixRepetitionPrefixLen}, {"PrefixRepetitionSuffixLen", o.PrefixRepetitionSuffixLen},
			{"PrefixRepetitionNumPrefixes", o.PrefixRepetitionNumPrefixes}, {"PrefixRepetitionOutputLen", o.PrefixRepetitionOutputLen},
		} {
			if f.v < 0 {
				return nil, optionErr(f.field, f.v, "must not be negative")
			}
		}
		c := PrefixRepetitionConfig{
			PrefixLen: def(o.PrefixRepetitionPrefixLen, 256), SuffixLen: def(o.PrefixRepetitionSuffixLen, 256),
			NumPrefixes: def(o.PrefixRepetitionNumPrefixes, 10), OutputLen: def(o.PrefixRepetitionOutputLen, 128),
			NumPrompts: def(o.NumPrompts, defaultNumPrompts), Seed: o.Seed, Synth: synth,
		}
		if ds, err = NewPrefixRepetition(c); err != nil {
			err = &OptionError{Field: "DatasetName", Value: o.DatasetName, Err: err}
		}
	default:
		return nil, optionErr("DatasetName", o.DatasetName, "want random, custom, sharegpt, lengths, trace or prefix-repetition%s",
			setting.DidYouMean(o.DatasetName, []string{"random", "custom", "sharegpt", "lengths", "trace", "prefix-repetition"}))
	}
	if err != nil {
		return nil, err
	}
	if o.SharedPrefixLen < 0 {
		return nil, optionErr("SharedPrefixLen", o.SharedPrefixLen, "must not be negative")
	}
	if o.SharedPrefixLen > 0 {
		if ds, err = WithSharedPrefix(ds, o.SharedPrefixLen, def(o.NumPrefixes, 1), o.Seed, synth); err != nil {
			return nil, &OptionError{Field: "NumPrefixes", Err: err}
		}
	}
	if o.CacheBust {
		if ds, err = WithCacheBust(ds, o.Seed, synth); err != nil {
			return nil, &OptionError{Field: "CacheBust", Err: err}
		}
	}
	return ds, nil
}

func randomFromOptions(o Options, synth *tokenize.Synthesizer) (Dataset, error) {
	c := RandomConfig{
		InputLen: def(o.RandomInputLen, defaultRandomInputLen), OutputLen: def(o.RandomOutputLen, defaultRandomOutputLen),
		RangeRatio: o.RandomRangeRatio, PrefixLen: o.RandomPrefixLen,
		NumPrompts: def(o.NumPrompts, defaultNumPrompts), Seed: o.Seed, Synth: synth,
	}
	var err error
	if o.InputLenDist != "" {
		if c.InputDist, err = ParseDist(o.InputLenDist); err != nil {
			return nil, &OptionError{Field: "InputLenDist", Err: err}
		}
	}
	if o.OutputLenDist != "" {
		if c.OutputDist, err = ParseDist(o.OutputLenDist); err != nil {
			return nil, &OptionError{Field: "OutputLenDist", Err: err}
		}
	}
	switch {
	case o.RandomInputLen < 0:
		return nil, optionErr("RandomInputLen", o.RandomInputLen, "must not be negative")
	case o.RandomOutputLen < 0:
		return nil, optionErr("RandomOutputLen", o.RandomOutputLen, "must not be negative")
	case !(o.RandomRangeRatio >= 0 && o.RandomRangeRatio < 1):
		return nil, optionErr("RandomRangeRatio", o.RandomRangeRatio, "must be in [0, 1)")
	case o.RandomPrefixLen < 0:
		return nil, optionErr("RandomPrefixLen", o.RandomPrefixLen, "must not be negative")
	}
	return NewRandom(c)
}

func traceOptions(o Options) (TraceOptions, error) {
	to := TraceOptions{Speedup: o.TraceSpeedup}
	if !(o.TraceSpeedup >= 0) || math.IsInf(o.TraceSpeedup, 0) {
		return to, optionErr("TraceSpeedup", o.TraceSpeedup, "want a positive number")
	}
	if o.TraceWindow == "" {
		return to, nil
	}
	a, b, ok := strings.Cut(o.TraceWindow, ":")
	start, err1 := parseSeconds(a)
	end, err2 := parseSeconds(b)
	if !ok || err1 != nil || err2 != nil || (end > 0 && end <= start) {
		return to, optionErr("TraceWindow", o.TraceWindow, "want START:END in seconds with 0 <= START < END (END may be empty)")
	}
	to.WindowStart, to.WindowEnd = start, end
	return to, nil
}

// parseSeconds parses a non-negative number of seconds; "" is 0.
func parseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || !(x >= 0) || x > 1e9 {
		return 0, fmt.Errorf("bad seconds %q", s)
	}
	return time.Duration(x * 1e9), nil
}

func def(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// limit returns the first n requests of ds (all when n <= 0 or n >= Len).
func limit(ds Dataset, n int) Dataset {
	if n <= 0 || n >= ds.Len() {
		return ds
	}
	return limited{ds, n}
}

type limited struct {
	Dataset
	n int
}

func (l limited) Len() int { return l.n }
