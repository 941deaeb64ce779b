package report

import (
	"io"

	"github.com/goodput/goodput/internal/breakdown"
)

// Section is one block of a level's outputs, rendered alike for a single
// level and for each level of a sweep: its terminal lines and its part of
// the level's result JSON.
type Section interface {
	// Terminal writes the block (nothing when it has nothing to say).
	Terminal(w io.Writer) error
	// JSON adds the block's key to a level's result object (none when
	// it has nothing to say).
	JSON(level map[string]any)
}

// levelSection is a breakdown with its renderers.
type levelSection struct {
	terminal func(io.Writer) error
	key      string
	json     func() map[string]any
}

func (s levelSection) Terminal(w io.Writer) error { return s.terminal(w) }

func (s levelSection) JSON(level map[string]any) {
	if m := s.json(); m != nil {
		level[s.key] = m
	}
}

var _ Section = levelSection{}

// renderers find each breakdown type's section, in registration order;
// examples make each one's example.
var (
	renderers []func(breakdown.Breakdown) (Section, bool)
	examples  []func(breakdown.Options) breakdown.Breakdown
)

// RegisterSection renders the breakdowns of type T: terminal writes the
// block, json is its object in a level's result under key (nil leaves
// the key out); example is one with every figure known, for the result
// schemas (SectionExamples). Call it from an init function, beside the
// renderers, so a breakdown's section is its one file here.
func RegisterSection[T breakdown.Breakdown](key string, terminal func(io.Writer, T) error, json func(T) map[string]any, example func(breakdown.Options) T) {
	examples = append(examples, func(o breakdown.Options) breakdown.Breakdown { return example(o) })
	renderers = append(renderers, func(b breakdown.Breakdown) (Section, bool) {
		t, ok := b.(T)
		if !ok {
			return nil, false
		}
		return levelSection{terminal: func(w io.Writer) error { return terminal(w, t) }, key: key, json: func() map[string]any { return json(t) }}, true
	})
}

// Sections are the sections of a level's breakdowns, in the level's order;
// a breakdown no section renders has none.
func Sections(l breakdown.Level) []Section {
	var out []Section
	for _, b := range l {
		for _, r := range renderers {
			if s, ok := r(b); ok {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// SectionExamples is a level holding every registered section's example
// for summary options o: rendered as a level's result, it has every key a
// section can add, so a --fail-if key can be checked against them without
// naming any breakdown.
func SectionExamples(o breakdown.Options) breakdown.Level {
	var l breakdown.Level
	for _, ex := range examples {
		l.Put(ex(o))
	}
	return l
}
