package jobgraph

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// OTLP is OpenTelemetry's own export format (the OTLP/JSON encoding a
// collector's file exporter and most SDKs' JSON exporters write):
// resourceSpans → scopeSpans (instrumentationLibrarySpans before OTLP
// 0.15) → spans, camel-case keys (traceId, spanId, parentSpanId,
// startTimeUnixNano as a decimal string), and attributes as a list of
// {key, value: {stringValue | intValue | doubleValue | boolValue}}. It is
// read into the same spans as the flat form, so the graph comes out the
// same.

// otlpResourceSpans reads the resourceSpans array's spans into spans.
func (d *jsonDoc) otlpResourceSpans(spans []otelSpan) ([]otelSpan, error) {
	return spans, d.arrayOf("resourceSpans", func() error {
		return d.objectOf("resourceSpans", func(key string) error {
			if key != "scopeSpans" && key != "instrumentationLibrarySpans" {
				return d.syntaxOrNil(d.sc.Skip())
			}
			return d.arrayOf(key, func() error {
				return d.objectOf(key, func(k string) error {
					if k != "spans" {
						return d.syntaxOrNil(d.sc.Skip())
					}
					return d.arrayOf("spans", func() error {
						s, err := d.otlpSpan()
						spans = append(spans, s)
						return err
					})
				})
			})
		})
	})
}

// otlpSpan reads one OTLP span.
func (d *jsonDoc) otlpSpan() (otelSpan, error) {
	s := otelSpan{line: d.here()}
	err := d.objectOf("spans", func(key string) (err error) {
		switch key {
		case "spanId":
			s.id, err = d.str(key)
		case "traceId":
			s.trace, err = d.str(key)
		case "parentSpanId":
			if d.sc.Peek() == 'n' {
				return d.syntaxOrNil(d.sc.Skip())
			}
			s.parent, err = d.str(key)
		case "name":
			s.name, err = d.str(key)
		case "startTimeUnixNano":
			s.start, s.hasStart, err = d.unixNanos(key)
		case "endTimeUnixNano":
			s.end, s.hasEnd, err = d.unixNanos(key)
		case "attributes":
			err = d.arrayOf(key, func() error { return d.otlpAttribute(&s) })
		default:
			err = d.syntaxOrNil(d.sc.Skip())
		}
		return err
	})
	return s, err
}

// unixNanos reads nanoseconds since the Unix epoch, a decimal string (as
// OTLP/JSON writes 64-bit integers) or a number; 0 and null mean unset.
func (d *jsonDoc) unixNanos(key string) (time.Time, bool, error) {
	line := d.here()
	n, null, text, err := d.int64Text(key, "a count of nanoseconds since 1970")
	switch {
	case err != nil:
		return time.Time{}, false, err
	case null || n == 0:
		return time.Time{}, false, nil
	case n < 0:
		return time.Time{}, false, d.errAt(line, key, fmt.Errorf("%q is not a count of nanoseconds since 1970", text))
	}
	return time.Unix(0, n).UTC(), true, nil
}

// int64Text reads a 64-bit integer written as a decimal string or a
// number (OTLP/JSON's two forms; past a float64's integers, so from its
// own digits); null is reported as such. A value that is not one is an
// error saying it is not want.
func (d *jsonDoc) int64Text(key, want string) (n int64, null bool, text string, err error) {
	line := d.here()
	switch d.sc.Peek() {
	case 'n':
		return 0, true, "", d.syntaxOrNil(d.sc.Skip())
	case '"':
		if text, err = d.str(key); err != nil {
			return 0, false, "", err
		}
	default:
		start := d.sc.Pos()
		if err := d.sc.Skip(); err != nil {
			return 0, false, "", d.syntax(err)
		}
		text = string(d.sc.Data()[start:d.sc.Pos()])
	}
	n, perr := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if perr != nil {
		return 0, false, "", d.errAt(line, key, fmt.Errorf("%q is not %s", text, want))
	}
	return n, false, text, nil
}

// otlpAttribute reads one {key, value} attribute into s: the GenAI keys
// the flat form's attributes object holds, each from the value's
// stringValue or intValue.
func (d *jsonDoc) otlpAttribute(s *otelSpan) error {
	line := d.here()
	var name string
	var str *string
	var num *int
	err := d.objectOf("attributes", func(key string) (err error) {
		switch key {
		case "key":
			name, err = d.str(key)
		case "value":
			err = d.objectOf(key, func(kind string) (err error) {
				switch kind {
				case "stringValue":
					var v string
					if v, err = d.str(kind); err == nil {
						str = &v
					}
				case "intValue":
					var v int64
					var null bool
					if v, null, _, err = d.int64Text(kind, "an integer"); err == nil && !null {
						n := int(v)
						num = &n
					}
				default:
					err = d.syntaxOrNil(d.sc.Skip())
				}
				return err
			})
		default:
			err = d.syntaxOrNil(d.sc.Skip())
		}
		return err
	})
	if err != nil {
		return err
	}
	text := func() (string, error) {
		if str == nil {
			return "", d.errAt(line, name, errors.New("want a stringValue"))
		}
		return *str, nil
	}
	count := func() (int, bool, error) {
		switch {
		case num != nil:
			return *num, true, nil
		case str != nil:
			n, err := strconv.Atoi(*str)
			if err != nil || n < 0 {
				return 0, false, d.errAt(line, name, fmt.Errorf("%q is not a token count", *str))
			}
			return n, true, nil
		}
		return 0, false, d.errAt(line, name, errors.New("want an intValue"))
	}
	_, err = s.genAI(name, line, attrReader{text: text, raw: func() ([]byte, error) {
		t, err := text()
		return []byte(t), err
	}, count: count}, d)
	return err
}
