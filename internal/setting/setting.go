// Package setting is the typed error of a setting a user gave: it names
// the setting by its Go field path in the struct the library checked, never
// by a command-line flag, so that only the command line — which knows the
// flag that filled each field — turns it into the line a user reads.
package setting

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agnivade/levenshtein"
)

// Name refers to another setting inside an Error's message ("leave
// RequestRate at inf"): rendered as that setting's flag by the command
// line, as its field path otherwise.
type Name string

// Error is a setting's bad value, or settings that contradict each other.
type Error struct {
	// Field is the field path of the setting at fault ("Autoscale.Min"),
	// relative to the struct checked; "" when the message names every
	// setting it is about with Name arguments.
	Field string
	// Value is the value as given, "" to leave it out of the line.
	Value string
	// format and args are the message; args of type Name are settings.
	format string
	args   []any
}

// Errorf is the error of field's value (value: as given, "" to leave it
// out), with a message whose Name arguments refer to other settings.
func Errorf(field, value, format string, args ...any) *Error {
	return &Error{Field: field, Value: value, format: format, args: args}
}

// Error renders the message with field paths.
func (e *Error) Error() string { return e.Render(func(f string) string { return f }) }

// Render is the message with every setting named by name(field path):
// "FIELD VALUE: message", or the message alone when Field is "".
func (e *Error) Render(name func(field string) string) string {
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if n, ok := a.(Name); ok {
			a = name(string(n))
		}
		args[i] = a
	}
	msg := fmt.Sprintf(e.format, args...)
	if e.Field == "" {
		return msg
	}
	head := name(e.Field)
	if e.Value != "" {
		head += " " + e.Value
	}
	return head + ": " + msg
}

// Fields are the settings the error is about: Field first, then every
// Name in the message.
func (e *Error) Fields() []string {
	var fs []string
	if e.Field != "" {
		fs = append(fs, e.Field)
	}
	for _, a := range e.args {
		if n, ok := a.(Name); ok {
			fs = append(fs, string(n))
		}
	}
	return fs
}

// Within is err with every field path it names prefixed by prefix and a
// dot (a struct checked as a field of a larger one), when err is an
// *Error; any other error is returned as it is.
func Within(prefix string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.args = make([]any, len(e.args))
	for i, a := range e.args {
		if n, ok := a.(Name); ok {
			a = Name(join(prefix, string(n)))
		}
		c.args[i] = a
	}
	if c.Field != "" {
		c.Field = join(prefix, c.Field)
	}
	return &c
}

func join(prefix, field string) string {
	return strings.TrimSuffix(prefix, ".") + "." + field
}

// Given says whether a setting was given explicitly (a flag on the
// command line, a key in a file), by field path: some settings mean
// something else when left at their default.
type Given func(field string) bool

// Has reports whether field was given; a nil Given knows of none.
func (g Given) Has(field string) bool { return g != nil && g(field) }

// DidYouMean is " (did you mean K?)" for the known word K nearest to w,
// when one is within two edits (case aside), "" otherwise: a misspelt
// flag or value is the commonest bad input, and the fix is one word.
func DidYouMean(w string, known []string) string {
	if k := Nearest(w, known); k != "" {
		return " (did you mean " + k + "?)"
	}
	return ""
}

// Nearest is the known word nearest to w within two edits (case aside),
// "" when none is; an exact match is no suggestion.
func Nearest(w string, known []string) string {
	if len(w) > 64 {
		return "" // nothing known is near a long word; keep the cost bounded
	}
	lw := strings.ToLower(w)
	best, bestD := "", 3
	for _, k := range known {
		d := levenshtein.ComputeDistance(lw, strings.ToLower(k))
		if d > 0 && d < bestD && d < len(k) {
			best, bestD = k, d
		}
	}
	return best
}
