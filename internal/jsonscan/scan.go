// Package jsonscan is a single-pass JSON scanner for the hot path of
// stream decoding: it validates a whole document as encoding/json would,
// skips what the caller does not ask for, and unescapes only the strings
// the caller keeps, into a reusable arena, so decoding an event allocates
// nothing once the arena has grown. The protocol decoders (OpenAI chunks,
// Anthropic Messages events, Responses events) are written on it.
//
// A Scanner is not safe for concurrent use; the zero value is ready after
// Reset.
package jsonscan

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrMalformed is wrapped by every error a Scanner returns: the document is
// not valid JSON.
var ErrMalformed = errors.New("malformed JSON")

// MaxDepth is the deepest nesting of arrays and objects accepted, the same
// limit as encoding/json, so both agree on which documents are valid.
const MaxDepth = 10000

// Scanner is the cursor over one document and the arena its unescaped
// strings live in.
type Scanner struct {
	data   []byte
	pos    int
	depth  int
	arena  []byte // unescaped string values of the current document
	keyBuf []byte // unescaped object key, for keys that contain escapes
}

// Span locates a decoded string: data[off:end] of the document, or of the
// arena when unescaping was needed. Offsets (not slices) survive the arena
// growing while later strings are unescaped.
type Span struct {
	off, end int
	arena    bool
}

// Empty reports whether the string is empty (or was absent).
func (s Span) Empty() bool { return s.end == s.off }

// Len is the unescaped string's length in bytes.
func (s Span) Len() int { return s.end - s.off }

// Reset starts scanning data, forgetting the previous document's strings
// (their spans and byte slices are no longer valid).
func (p *Scanner) Reset(data []byte) {
	p.data, p.pos, p.depth = data, 0, 0
	p.arena = p.arena[:0]
}

// Bytes materialises a span of the current document; nil when empty. The
// slice aliases the document or the arena and is valid until Reset.
func (p *Scanner) Bytes(s Span) []byte {
	if s.Empty() {
		return nil
	}
	if s.arena {
		return p.arena[s.off:s.end:s.end]
	}
	return p.data[s.off:s.end:s.end]
}

// Pos is the cursor's offset in the document.
func (p *Scanner) Pos() int { return p.pos }

// Data is the document being scanned.
func (p *Scanner) Data() []byte { return p.data }

// End checks that nothing but white space follows the top-level value.
func (p *Scanner) End() error {
	p.WS()
	if p.pos != len(p.data) {
		return p.Syntax("after top-level value")
	}
	return nil
}

// Object reports whether the document's top-level value starts an object
// (cursor at '{'); when it does not, it returns the error that says why:
// an empty document, invalid JSON, or valid JSON that is not an object.
func (p *Scanner) Object() error {
	if p.Peek() == '{' {
		return nil
	}
	if p.pos >= len(p.data) {
		return fmt.Errorf("%w: empty payload", ErrMalformed)
	}
	if err := p.Skip(); err != nil {
		return err
	}
	return fmt.Errorf("%w: payload is not a JSON object", ErrMalformed)
}

// Count returns an integer literal in [0, limit] as an int, or 0 for any
// other value (which is validated and skipped).
func (p *Scanner) Count(limit int64) (int, error) {
	n, ok, err := p.Int()
	if !ok || n < 0 || n > limit {
		return 0, err
	}
	return int(n), err
}

// IntValue returns an integer literal that fits an int (negative ones
// included, for the caller to judge), or 0 for any other value (which is
// validated and skipped).
func (p *Scanner) IntValue() (int, error) {
	n, ok, err := p.Int()
	if !ok || int64(int(n)) != n {
		return 0, err
	}
	return int(n), err
}

// MemberInt reads the object at the cursor and returns its member name as
// IntValue reads it (0 when absent, or when the value is not an object).
func (p *Scanner) MemberInt(name string) (v int, err error) {
	_, err = p.Members(func(k []byte) (err error) {
		if string(k) == name {
			v, err = p.IntValue()
			return err
		}
		return p.Skip()
	})
	return v, err
}

// Syntax is the error for the byte at the cursor, or for the end.
func (p *Scanner) Syntax(what string) error {
	if p.pos >= len(p.data) {
		return fmt.Errorf("%w: unexpected end of JSON %s", ErrMalformed, what)
	}
	return fmt.Errorf("%w: invalid character %q at offset %d %s", ErrMalformed, p.data[p.pos], p.pos, what)
}

func (p *Scanner) WS() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// Peek skips whitespace and returns the next byte (0 at the end).
func (p *Scanner) Peek() byte {
	p.WS()
	if p.pos >= len(p.data) {
		return 0
	}
	return p.data[p.pos]
}

func (p *Scanner) push() error {
	p.depth++
	if p.depth > MaxDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrMalformed, MaxDepth)
	}
	return nil
}

// OpenObject consumes '{' and reports whether a member follows.
func (p *Scanner) OpenObject() (bool, error) {
	if p.Peek() != '{' {
		return false, p.Syntax("looking for beginning of object")
	}
	return p.open('}')
}

// NextMember consumes ',' (true: another member follows) or '}' (false).
func (p *Scanner) NextMember() (bool, error) { return p.next('}', "after object member") }

// open consumes the opening bracket the caller has checked and reports
// whether the container holds anything (false: it closed at once).
func (p *Scanner) open(closer byte) (bool, error) {
	p.pos++
	if err := p.push(); err != nil {
		return false, err
	}
	if p.Peek() == closer {
		p.pos++
		p.depth--
		return false, nil
	}
	return true, nil
}

// next consumes ',' (true: another member or element follows) or closer
// (false).
func (p *Scanner) next(closer byte, what string) (bool, error) {
	switch p.Peek() {
	case ',':
		p.pos++
		return true, nil
	case closer:
		p.pos++
		p.depth--
		return false, nil
	}
	return false, p.Syntax(what)
}

// Key parses a member name and its colon. The result aliases the payload
// or the decoder's key buffer and is valid until the next key.
func (p *Scanner) Key() ([]byte, error) {
	if p.Peek() != '"' {
		return nil, p.Syntax("looking for object key")
	}
	s, err := p.scan(true, true)
	if err != nil {
		return nil, err
	}
	var k []byte
	if s.arena {
		k = p.keyBuf[s.off:s.end]
	} else {
		k = p.data[s.off:s.end]
	}
	if p.Peek() != ':' {
		return nil, p.Syntax("after object key")
	}
	p.pos++
	return k, nil
}

// Members walks the object at the cursor, calling member with each key and
// the cursor at its value, which member must consume. Any other value is
// skipped, and obj is false.
func (p *Scanner) Members(member func(k []byte) error) (obj bool, err error) {
	if p.Peek() != '{' {
		return false, p.Skip()
	}
	more, err := p.OpenObject()
	for ; more && err == nil; more, err = p.NextMember() {
		var k []byte
		if k, err = p.Key(); err != nil {
			return true, err
		}
		if err = member(k); err != nil {
			return true, err
		}
	}
	return true, err
}

// Document reads data as one JSON object, calling member with each of its
// members as Members does, and checks that nothing follows it: how a
// decoder reads one event's payload. A payload that is not an object is
// Object's error.
func (p *Scanner) Document(data []byte, member func(k []byte) error) error {
	p.Reset(data)
	if err := p.Object(); err != nil {
		return err
	}
	if _, err := p.Members(member); err != nil {
		return err
	}
	return p.End()
}

// OpenArray consumes '[' (the caller has peeked it) and reports whether an
// element follows.
func (p *Scanner) OpenArray() (bool, error) { return p.open(']') }

// NextElement consumes ',' (true: another element follows) or ']' (false).
func (p *Scanner) NextElement() (bool, error) { return p.next(']', "after array element") }

// Skip validates and skips any JSON value.
func (p *Scanner) Skip() error {
	switch c := p.Peek(); {
	case c == '"':
		_, err := p.scan(false, false)
		return err
	case c == '{':
		more, err := p.OpenObject()
		for ; more && err == nil; more, err = p.NextMember() {
			if _, err = p.Key(); err != nil {
				return err
			}
			if err = p.Skip(); err != nil {
				return err
			}
		}
		return err
	case c == '[':
		more, err := p.OpenArray()
		for ; more && err == nil; more, err = p.NextElement() {
			if err = p.Skip(); err != nil {
				return err
			}
		}
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := p.Number()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return p.Syntax("looking for beginning of value")
}

func (p *Scanner) literal(lit string) error {
	if len(p.data)-p.pos >= len(lit) && string(p.data[p.pos:p.pos+len(lit)]) == lit {
		p.pos += len(lit)
		return nil
	}
	for i := 0; i < len(lit) && p.pos < len(p.data) && p.data[p.pos] == lit[i]; i++ {
		p.pos++ // point the error at the first wrong byte
	}
	return p.Syntax("in literal " + lit)
}

// Number validates a JSON number and returns its value when it is an
// integer literal (no fraction or exponent) that fits in int64.
func (p *Scanner) Number() (n int64, isInt bool, err error) {
	d := p.data
	i := p.pos
	neg := false
	if d[i] == '-' {
		neg = true
		i++
	}
	if i >= len(d) || d[i] < '0' || d[i] > '9' {
		p.pos = i
		return 0, false, p.Syntax("in numeric literal")
	}
	// Accumulate the magnitude; -(1<<63) is the one value whose magnitude
	// does not fit in int64.
	limit := uint64(1<<63 - 1)
	if neg {
		limit++
	}
	var u uint64
	isInt = true
	if d[i] == '0' {
		i++
	} else {
		for ; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
			v := uint64(d[i] - '0')
			if u > (limit-v)/10 {
				isInt = false // valid JSON, but not an int64
			}
			u = u*10 + v
		}
	}
	if i < len(d) && d[i] == '.' {
		isInt = false
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return 0, false, p.Syntax("after decimal point in numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		isInt = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return 0, false, p.Syntax("in exponent of numeric literal")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	if !isInt {
		return 0, false, nil
	}
	if neg {
		return int64(-u), true, nil // two's complement: also right for -(1<<63)
	}
	return int64(u), true, nil
}

// Int returns the value of an integer literal; any other value is
// validated, skipped and reported as !ok.
func (p *Scanner) Int() (int64, bool, error) {
	if c := p.Peek(); c == '-' || (c >= '0' && c <= '9') {
		return p.Number()
	}
	return 0, false, p.Skip()
}

// Str returns a string value's span; any other value is validated,
// skipped and reported as !ok.
func (p *Scanner) Str() (Span, bool, error) {
	if p.Peek() == '"' {
		s, err := p.scan(true, false)
		return s, err == nil, err
	}
	return Span{}, false, p.Skip()
}

// scan parses the string at p.pos (a '"'). With keep, it returns the span of
// its unescaped value: the raw bytes when they need no change, else a copy
// in the arena (or, for keys, in keyBuf) with escapes decoded and each
// invalid UTF-8 byte replaced by U+FFFD, as encoding/json does.
func (p *Scanner) scan(keep, isKey bool) (Span, error) {
	d := p.data
	start := p.pos + 1
	i := start
	ascii := true
	for i < len(d) {
		c := d[i]
		if plainASCII[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			p.pos = i + 1
			if !keep || ascii || utf8.Valid(d[start:i]) {
				return Span{off: start, end: i}, nil
			}
			return p.unescape(start, isKey)
		case c == '\\':
			if keep {
				return p.unescape(start, isKey)
			}
			n, err := p.escapeLen(i)
			if err != nil {
				return Span{}, err
			}
			i += n
		case c < 0x20:
			p.pos = i
			return Span{}, p.Syntax("in string literal")
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			i++
		}
	}
	p.pos = i
	return Span{}, p.Syntax("in string literal")
}

// plainASCII marks the bytes a string can hold that need no attention:
// printable ASCII other than '"' and '\\'. A table lookup keeps the scan of
// skipped strings (ids, model names) to a load and a branch per byte.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escapeLen validates the escape sequence at d[i] ('\\') and returns its
// length.
func (p *Scanner) escapeLen(i int) (int, error) {
	d := p.data
	if i+1 >= len(d) {
		p.pos = len(d)
		return 0, p.Syntax("in string escape code")
	}
	switch d[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		for j := i + 2; j < i+6; j++ {
			if j >= len(d) || unhex(d[j]) < 0 {
				p.pos = min(j, len(d))
				return 0, p.Syntax("in \\u hexadecimal character escape")
			}
		}
		return 6, nil
	}
	p.pos = i + 1
	return 0, p.Syntax("in string escape code")
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

// u4 decodes the \uXXXX at d[i], or returns -1 when there is none.
func u4(d []byte, i int) rune {
	if i+6 > len(d) || d[i] != '\\' || d[i+1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range d[i+2 : i+6] {
		h := unhex(c)
		if h < 0 {
			return -1
		}
		r = r<<4 | h
	}
	return r
}

// unescape decodes the string starting at d[start] (just after its opening
// quote) into the arena or keyBuf.
func (p *Scanner) unescape(start int, isKey bool) (Span, error) {
	d := p.data
	var out []byte
	if isKey {
		out = p.keyBuf[:0]
	} else {
		out = p.arena
	}
	off := len(out)
	i := start
	for {
		if i >= len(d) {
			p.pos = i
			return Span{}, p.Syntax("in string literal")
		}
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			if isKey {
				p.keyBuf = out
			} else {
				p.arena = out
			}
			return Span{off: off, end: len(out), arena: true}, nil
		case c == '\\':
			n, err := p.escapeLen(i)
			if err != nil {
				return Span{}, err
			}
			switch e := d[i+1]; e {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := u4(d, i)
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by a low one is one
					// character; anything else becomes U+FFFD and the next
					// escape is decoded on its own, as in encoding/json.
					if dec := utf16.DecodeRune(r, u4(d, i+6)); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						n += 6
						break
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default: // '"', '\\', '/'
				out = append(out, e)
			}
			i += n
		case c < 0x20:
			p.pos = i
			return Span{}, p.Syntax("in string literal")
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d[i:i+size]...)
			}
			i += size
		}
	}
}
