package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// object is a JSON object that keeps its keys in insertion order, so the
// result file reads in the same order as vLLM's.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

// set adds k, or replaces its value in place when already present.
func (o *object) set(k string, v any) *object {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
	return o
}

// MarshalJSON writes the keys in insertion order.
func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := encode(&b, k); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := encode(&b, o.vals[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// encode appends v's JSON to b without escaping <, > and & (bucket labels
// such as "<1K" stay readable; Python does not escape them either).
func encode(b *bytes.Buffer, v any) error {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}

// marshalIndent renders v indented by two spaces, without HTML escaping,
// with a final newline.
func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// pyFloat is a float64 written as Python's json module writes a float, so a
// value vLLM stores as a float (duration, throughputs, latencies) stays a
// float for scripts that check types: 3.0 rather than Go's 3, 1e-05 and
// 1e+16 in exponent form at Python's thresholds. NaN and ±Inf, which are not
// JSON, become null.
type pyFloat float64

// MarshalJSON implements json.Marshaler.
func (f pyFloat) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	// Python's repr switches to exponent form below 1e-4 and from 1e16.
	if a := math.Abs(x); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.AppendFloat(nil, x, 'e', -1, 64), nil
	}
	b := strconv.AppendFloat(nil, x, 'f', -1, 64)
	if !bytes.ContainsRune(b, '.') {
		b = append(b, ".0"...)
	}
	return b, nil
}
