package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
)

// anySchema is the type of Any.
type anySchema struct{}

// Any marks a part of a schema whose keys are not known before the run
// (a finding's evidence, the simulated engine's settings): Validate accepts
// every path into it.
var Any any = anySchema{}

// KeyError says a condition names a key the result can never hold as a
// number, found before the run rather than after it.
type KeyError struct {
	// Expr is the expression as written; Key the key it names.
	Expr, Key string
	// Problem says what is wrong: "no such key in the result", "is an
	// object, not a number", "is always null in this run", …
	Problem string
	// Near lists known keys close to Key, the closest first (at most
	// maxNear).
	Near []string
}

// Error names the expression, quoted, then the problem and the keys near
// it; the CLI puts the flag in front.
func (e *KeyError) Error() string {
	msg := fmt.Sprintf("%q: %s %s", e.Expr, e.Key, e.Problem)
	if len(e.Near) > 0 {
		msg += "; did you mean " + strings.Join(e.Near, ", ") + "?"
	}
	return msg
}

// maxNear bounds the suggestions of a KeyError.
const maxNear = 5

// Validate checks each condition's key against schema, a decoded result of
// the shape the run will write: its objects hold every key the result can
// have, an array's first element stands for each of its elements (so
// "levels.3.p99_ttft_ms" is known when "levels.0.p99_ttft_ms" is), and Any
// accepts whatever lies below it. Keys are resolved as Check resolves them.
// It returns a *KeyError for the first key that is absent, names an
// object or an array, or is null in the schema (such a key would fail
// every run), with the known keys closest to it.
func (g Gate) Validate(schema map[string]any) error {
	for _, c := range g.Conds {
		v, ok := walk(schema, c.Key, true)
		if !ok {
			return &KeyError{Expr: c.Expr, Key: c.Key, Problem: "is not a key of the result", Near: near(schema, c.Key)}
		}
		switch t := v.(type) {
		case anySchema:
		case nil:
			return &KeyError{Expr: c.Expr, Key: c.Key, Problem: "is always null in this run's result"}
		case map[string]any:
			return &KeyError{Expr: c.Expr, Key: c.Key, Problem: "is an object, not a number: name one of its keys", Near: children(c.Key, t)}
		case []any:
			return &KeyError{Expr: c.Expr, Key: c.Key, Problem: "is an array, not a number: name an element, e.g. " + c.Key + ".0"}
		}
	}
	return nil
}

// children lists an object's keys as full paths, sorted, at most maxNear.
func children(prefix string, m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, prefix+"."+k)
	}
	slices.Sort(out)
	return out[:min(len(out), maxNear)]
}

// paths lists every leaf path of a schema (arrays as their element 0),
// leaving out what lies under Any.
func paths(prefix string, v any, out []string) []string {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch t := v.(type) {
	case anySchema:
	case map[string]any:
		for k, x := range t {
			out = paths(join(k), x, out)
		}
	case []any:
		if len(t) > 0 {
			out = paths(join("0"), t[0], out)
		}
	default:
		if prefix != "" {
			out = append(out, prefix)
		}
	}
	return out
}

// near ranks the schema's leaf keys by closeness to key: first those
// within a few edits (typos), then those sharing the most words ("p99",
// "ttft", "ms"), each group by edit distance, and returns at most maxNear.
func near(schema map[string]any, key string) []string {
	type cand struct {
		path         string
		dist, shared int
		typo         bool
	}
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '_' || r == '.' })
	}
	kw := words(key)
	limit := max(2, len(key)/4)
	var cs []cand
	for _, p := range paths("", schema, nil) {
		d := levenshtein.ComputeDistance(strings.ToLower(key), strings.ToLower(p))
		shared := 0
		for _, w := range words(p) {
			if slices.Contains(kw, w) && w != "ms" && w != "0" {
				shared++
			}
		}
		if d <= limit || shared > 0 {
			cs = append(cs, cand{path: p, dist: d, shared: shared, typo: d <= limit})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		switch {
		case a.typo != b.typo:
			if a.typo {
				return -1
			}
			return 1
		case !a.typo && a.shared != b.shared:
			return b.shared - a.shared
		case a.dist != b.dist:
			return a.dist - b.dist
		}
		return strings.Compare(a.path, b.path)
	})
	var out []string
	for _, c := range cs[:min(len(cs), maxNear)] {
		out = append(out, c.path)
	}
	return out
}
