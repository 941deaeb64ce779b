package servermetrics

import (
	"bytes"
	"sync"
)

// Series bounds of one Parse. The body's cap (MaxBodyBytes) bounds bytes,
// not series: 16 MiB of short unknown series is close to a million, which
// the exposition parser would turn into a million label maps (a gigabyte,
// and GC work that steals the sending goroutines' CPU). So the body is
// first sifted line by line, cheaply: the families the vocabulary reads
// are kept up to MaxKnownSeries, the others up to MaxRawSeries, and the
// rest are counted in Snapshot.DroppedSeries, never parsed.
const (
	// MaxKnownSeries bounds the sample lines (a histogram bucket is one)
	// of the vocabulary's families that one Parse reads; a vLLM body of
	// a few engines has a few thousand.
	MaxKnownSeries = 1 << 16
	// MaxRawSeries bounds the sample lines of other families that one
	// Parse keeps in Snapshot.Raw: as many as a stored snapshot holds
	// (MaxStoredRawSeries).
	MaxRawSeries = MaxStoredRawSeries
)

// knownFamilies is every family name the vocabulary reads, for any kind.
var knownFamilies = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, d := range vocabulary {
		for _, srcs := range d.Sources {
			for _, s := range srcs {
				m[s.Family] = true
			}
		}
	}
	return m
})

// sifted is a body cut down to the lines Parse reads.
type sifted struct {
	text []byte
	// lines maps a line of text (0-based) to its line in the body
	// (1-based), so a syntax error names the body's line.
	lines []int
	// kinds counts the families with a sample per server kind, over the
	// whole body: detection must not depend on what was cut.
	kinds map[Kind]int
	// dropped counts the sample lines cut.
	dropped int
}

// bodyLine maps a 1-based line of the sifted text to the body's.
func (s *sifted) bodyLine(l int) int {
	switch {
	case l <= 0 || len(s.lines) == 0:
		return l
	case l > len(s.lines):
		return s.lines[len(s.lines)-1] + l - len(s.lines)
	}
	return s.lines[l-1]
}

// sift keeps the body's comment lines (HELP, TYPE) and sample lines of
// the known families, and of the others while MaxRawSeries lasts. A
// sample belongs to the family of the TYPE or HELP line before it when
// its name is that family's or that plus _bucket, _sum, _count, _total or
// _created (as the text format's parser reads it), else to its own name.
// It allocates only for the lines it keeps.
func sift(body []byte) sifted {
	known := knownFamilies()
	s := sifted{kinds: map[Kind]int{}}
	var cur, counted []byte // the family of the last comment line; the last family counted
	knownKept, rawKept := 0, 0
	keep := func(line []byte, n int) {
		s.text = append(s.text, line...)
		s.text = append(s.text, '\n')
		s.lines = append(s.lines, n)
	}
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		t := bytes.TrimLeft(line, " \t")
		if len(t) == 0 {
			continue
		}
		if t[0] == '#' {
			f := bytes.Fields(t[1:])
			if len(f) < 2 || (string(f[0]) != "HELP" && string(f[0]) != "TYPE") {
				continue // a plain comment: the parser ignores it
			}
			cur = unquote(f[1])
			if known[string(cur)] || rawKept < MaxRawSeries {
				keep(line, n)
			}
			continue
		}
		name := metricName(t)
		fam := familyOf(name, cur)
		if !bytes.Equal(fam, counted) {
			s.kinds[kindOf(fam)]++
			counted = fam
		}
		switch {
		case known[string(fam)] || known[string(name)]: // the parser may take either for the family
			if knownKept < MaxKnownSeries {
				keep(line, n)
				knownKept++
				continue
			}
		case rawKept < MaxRawSeries:
			keep(line, n)
			rawKept++
			continue
		}
		s.dropped++
	}
	return s
}

// metricName is a sample line's metric name: up to a brace or blank, or
// the quoted name first inside the braces (a UTF-8 name).
func metricName(t []byte) []byte {
	if len(t) > 0 && t[0] == '{' {
		r := bytes.TrimLeft(t[1:], " \t")
		if len(r) > 0 && r[0] == '"' {
			if i := bytes.IndexByte(r[1:], '"'); i >= 0 {
				return r[1 : 1+i]
			}
		}
		return nil
	}
	if i := bytes.IndexAny(t, "{ \t"); i >= 0 {
		return t[:i]
	}
	return t
}

// unquote strips the quotes of a quoted (UTF-8) family name.
func unquote(b []byte) []byte {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		return b[1 : len(b)-1]
	}
	return b
}

// familyOf is the family a sample named name belongs to, after a comment
// line of family cur.
func familyOf(name, cur []byte) []byte {
	if len(cur) == 0 || !bytes.HasPrefix(name, cur) {
		return name
	}
	switch string(name[len(cur):]) {
	case "", "_bucket", "_sum", "_count", "_total", "_created":
		return cur
	}
	return name
}

// kindOf is the server kind a family's name prefix says (KindUnknown for
// none), read without making a string of the name.
func kindOf(family []byte) Kind {
	for _, p := range prefixes {
		if len(family) >= len(p.prefix) && string(family[:len(p.prefix)]) == p.prefix {
			return p.kind
		}
	}
	return KindUnknown
}
