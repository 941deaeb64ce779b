// Package gate turns --fail-if expressions such as 'p99_ttft_ms>500' or
// 'request_goodput<10' into a check over a result JSON, so goodput can guard
// a deployment pipeline: a bound that holds is a failure (exit code 3 in the
// CLI), and the check says which bound failed and with what actual value.
//
// An expression is KEY OP NUMBER. KEY names a value in the result parsed into
// map[string]any; a dotted key reaches into nested objects and arrays
// ("slo.good", "levels.2.p99_ttft_ms", "sweep.goodput_peak.load"), and a key
// that itself contains a dot, like vLLM's "p99.9_ttft_ms", is found too (the
// longest key present wins at each level). OP is one of > >= < <= == !=.
//
// A key whose result carries its confidence interval beside it (KEY_ci:
// [lo, hi], as goodput writes p99_ttft_ms_ci) is judged on the interval
// (Judge): the bound fails when it holds over the whole interval, passes
// when it holds nowhere in it, and is inconclusive when the interval
// straddles it: the run cannot tell the two apart, and a verdict either
// way would be luck. A KEY_ci of null (too few samples for an interval)
// leaves the value to decide, and says so.
//
// Validate checks the keys before the run, against a schema of the result
// (one rendered for an empty run with the same options), so a typo is a
// usage error naming close keys instead of a failed gate after the run.
//
// The package is pure; a Gate is safe for concurrent use.
package gate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Op is a comparison operator.
type Op string

// The comparison operators an expression may use.
const (
	OpGT Op = ">"
	OpGE Op = ">="
	OpLT Op = "<"
	OpLE Op = "<="
	OpEQ Op = "=="
	OpNE Op = "!="
)

// Cond is one parsed expression: the run fails when Key's value Op Value holds.
type Cond struct {
	// Expr is the expression as written (trimmed).
	Expr string
	// Key is the dotted path of the result value.
	Key string
	// Op compares the result value (left) with Value (right).
	Op Op
	// Value is the bound, in the key's own unit.
	Value float64
}

// Gate is a set of failure conditions; the zero Gate never fails.
type Gate struct {
	// Conds are the conditions in the order given.
	Conds []Cond
}

// syntax is the shape every parse error points to.
const syntax = "want KEY OP NUMBER, e.g. p99_ttft_ms>500 (OP one of > >= < <= == !=)"

// ExprError is an expression that does not parse.
type ExprError struct {
	// Expr is the expression as given.
	Expr string
	// Err says what is wrong with it.
	Err error
}

// Error names the expression, quoted, then the problem; the CLI puts the
// flag in front.
func (e *ExprError) Error() string { return strconv.Quote(e.Expr) + ": " + e.Err.Error() }

func (e *ExprError) Unwrap() error { return e.Err }

func exprErr(expr, format string, args ...any) error {
	return &ExprError{Expr: expr, Err: fmt.Errorf(format, args...)}
}

// Parse reads --fail-if expressions. An error is an *ExprError naming the
// expression.
func Parse(exprs []string) (Gate, error) {
	var g Gate
	for _, e := range exprs {
		c, err := parseOne(e)
		if err != nil {
			return Gate{}, err
		}
		g.Conds = append(g.Conds, c)
	}
	return g, nil
}

func parseOne(expr string) (Cond, error) {
	e := strings.TrimSpace(expr)
	i := strings.IndexAny(e, "<>=!")
	if i < 0 {
		return Cond{}, exprErr(expr, "no operator: %s", syntax)
	}
	op := Op(e[i : i+1])
	if i+1 < len(e) && e[i+1] == '=' {
		op = Op(e[i : i+2])
	}
	switch op {
	case OpGT, OpGE, OpLT, OpLE, OpEQ, OpNE:
	default:
		return Cond{}, exprErr(expr, "operator %q: %s", op, syntax)
	}
	key := strings.TrimSpace(e[:i])
	num := strings.TrimSpace(e[i+len(op):])
	if key == "" {
		return Cond{}, exprErr(expr, "no key before %s: %s", op, syntax)
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return Cond{}, exprErr(expr, "key %q: only letters, digits, _ - and . (for nesting): %s", key, syntax)
		}
	}
	if strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		return Cond{}, exprErr(expr, "key %q has an empty part", key)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) {
		return Cond{}, exprErr(expr, "%q is not a number: %s", num, syntax)
	}
	return Cond{Expr: e, Key: key, Op: op, Value: v}, nil
}

// holds reports whether x Op v.
func (c Cond) holds(x float64) bool {
	switch c.Op {
	case OpGT:
		return x > c.Value
	case OpGE:
		return x >= c.Value
	case OpLT:
		return x < c.Value
	case OpLE:
		return x <= c.Value
	case OpEQ:
		return x == c.Value
	default:
		return x != c.Value
	}
}

// Check evaluates every condition against result and returns one
// human-readable line per failed bound, naming the actual value, e.g.
// "p99_ttft_ms>500: p99_ttft_ms is 612.3". A key that is absent, null or not
// a number fails too (a CI gate must not pass because of a typo). An empty
// slice means the run passed.
func (g Gate) Check(result map[string]any) []string {
	var failed []string
	for _, c := range g.Conds {
		v, ok := lookup(result, c.Key)
		if !ok {
			failed = append(failed, fmt.Sprintf("%s: no key %s in the result", c.Expr, c.Key))
			continue
		}
		x, ok := number(v)
		if !ok {
			failed = append(failed, fmt.Sprintf("%s: %s is %s, not a number", c.Expr, c.Key, show(v)))
			continue
		}
		if c.holds(x) {
			failed = append(failed, fmt.Sprintf("%s: %s is %s", c.Expr, c.Key, strconv.FormatFloat(x, 'g', -1, 64)))
		}
	}
	return failed
}

// Verdict is what a gate says of a result: the bounds that failed, those
// the result's intervals cannot decide, and notes on bounds decided by a
// value whose interval the sample could not support. Each is one line
// naming the expression and the figures.
type Verdict struct {
	Failed, Inconclusive, Notes []string
}

// Judge is Check with intervals: a condition on a key whose result holds
// KEY_ci as [lo, hi] fails when it holds at both ends (for the ordering
// operators, then everywhere between), passes when it holds at neither,
// and is inconclusive otherwise; == and != are judged on the value.
func (g Gate) Judge(result map[string]any) Verdict {
	var v Verdict
	for _, c := range g.Conds {
		val, ok := lookup(result, c.Key)
		if !ok {
			v.Failed = append(v.Failed, fmt.Sprintf("%s: no key %s in the result", c.Expr, c.Key))
			continue
		}
		x, ok := number(val)
		if !ok {
			v.Failed = append(v.Failed, fmt.Sprintf("%s: %s is %s, not a number", c.Expr, c.Key, show(val)))
			continue
		}
		iv, has := lookup(result, c.Key+"_ci")
		lo, hi, bounded := interval(iv)
		switch {
		case !has || c.Op == OpEQ || c.Op == OpNE:
			if c.holds(x) {
				v.Failed = append(v.Failed, fmt.Sprintf("%s: %s is %s", c.Expr, c.Key, num(x)))
			}
		case !bounded:
			if c.holds(x) {
				v.Failed = append(v.Failed, fmt.Sprintf("%s: %s is %s", c.Expr, c.Key, num(x)))
			}
			v.Notes = append(v.Notes, fmt.Sprintf("%s: judged on %s = %s alone: the sample is too small for its interval", c.Expr, c.Key, num(x)))
		case c.holds(lo) && c.holds(hi):
			v.Failed = append(v.Failed, fmt.Sprintf("%s: %s is %s [%s, %s]", c.Expr, c.Key, num(x), num(lo), num(hi)))
		case c.holds(lo) || c.holds(hi):
			v.Inconclusive = append(v.Inconclusive, fmt.Sprintf("%s: %s is %s, but its interval [%s, %s] holds %s", c.Expr, c.Key, num(x), num(lo), num(hi), strconv.FormatFloat(c.Value, 'g', -1, 64)))
		}
	}
	return v
}

// interval reads a KEY_ci value: [lo, hi] with lo ≤ hi, else ok false.
func interval(v any) (lo, hi float64, ok bool) {
	a, isArr := v.([]any)
	if !isArr || len(a) != 2 {
		return 0, 0, false
	}
	lo, ok1 := number(a[0])
	hi, ok2 := number(a[1])
	return lo, hi, ok1 && ok2 && lo <= hi
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

// lookup resolves a dotted path in a result.
func lookup(v any, path string) (any, bool) { return walk(v, path, false) }

// walk resolves a dotted path. At each level the whole remaining path is
// tried as a key first, then ever longer dotted prefixes, so keys holding a
// dot ("p99.9_ttft_ms") are reachable. Over a schema (Validate), any index
// reaches an array's first element and Any takes every path.
func walk(v any, path string, schema bool) (any, bool) {
	switch t := v.(type) {
	case anySchema:
		return Any, true
	case map[string]any:
		if x, ok := t[path]; ok {
			return x, true
		}
		for i := 0; i < len(path); i++ {
			if path[i] != '.' {
				continue
			}
			if sub, ok := t[path[:i]]; ok {
				if x, ok := walk(sub, path[i+1:], schema); ok {
					return x, true
				}
			}
		}
	case []any:
		head, rest, more := strings.Cut(path, ".")
		i, err := strconv.Atoi(head)
		if schema && err == nil && i >= 0 {
			i = 0 // a schema holds one element standing for all
		}
		if err != nil || i < 0 || i >= len(t) {
			return nil, false
		}
		if !more {
			return t[i], true
		}
		return walk(t[i], rest, schema)
	}
	return nil, false
}

// number reads a JSON value as a number: numbers, numeric strings (such as
// request_rate "inf") and booleans (1 and 0).
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, true
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case bool:
		if t {
			return 1, true
		}
		return 0, true
	case string:
		x, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		return x, err == nil && !math.IsNaN(x)
	}
	return 0, false
}

func show(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%q", fmt.Sprint(v))
}
