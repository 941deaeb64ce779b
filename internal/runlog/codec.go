package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"
)

// A records file is JSON Lines: a {"meta":{...}} line, then one Record per
// line, and last, when the run finished, an {"end":{"levels":[...]}} line
// with the levels as they ran. Chunks are encoded compactly as [t_ns, tokens, visible(0|1)] so a
// 100,000-request run stays a manageable file.

// AppendRecord appends r as one JSON line (with the trailing newline) to dst.
// It is hand-written because it runs once per finished request on the
// measuring process.
func AppendRecord(dst []byte, r *Record) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, r.ID)
	dst = append(dst, `,"level":`...)
	dst = strconv.AppendInt(dst, int64(r.Level), 10)
	if r.Warmup {
		dst = append(dst, `,"warmup":true`...)
	}
	dst = append(dst, `,"intended_ns":`...)
	dst = strconv.AppendInt(dst, r.Intended, 10)
	dst = append(dst, `,"sent_ns":`...)
	dst = strconv.AppendInt(dst, r.Sent, 10)
	if r.ConnectNs != 0 {
		dst = append(dst, `,"connect_ns":`...)
		dst = strconv.AppendInt(dst, r.ConnectNs, 10)
	}
	dst = append(dst, `,"chunks":[`...)
	for i, c := range r.Chunks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, c.T, 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, int64(c.Tokens), 10)
		if c.Visible {
			dst = append(dst, ",1]"...)
		} else {
			dst = append(dst, ",0]"...)
		}
	}
	dst = append(dst, `],"end_ns":`...)
	dst = strconv.AppendInt(dst, r.End, 10)
	dst = append(dst, `,"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.PromptTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.CompletionTokens), 10)
	dst = appendIntField(dst, "reasoning_tokens", r.ReasoningTokens)
	dst = appendIntField(dst, "cached_tokens", r.CachedTokens)
	if r.TokenSource != "" {
		dst = append(dst, `,"token_source":`...)
		dst = appendString(dst, string(r.TokenSource))
	}
	if r.UsageRejected != "" {
		dst = append(dst, `,"usage_rejected":`...)
		dst = appendString(dst, r.UsageRejected)
	}
	dst = appendIntField(dst, "requested_prompt_tokens", r.RequestedPromptTokens)
	dst = appendIntField(dst, "max_tokens", r.MaxTokens)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(r.Status), 10)
	if r.FinishReason != "" {
		dst = append(dst, `,"finish_reason":`...)
		dst = appendString(dst, r.FinishReason)
	}
	if r.ErrorClass != "" {
		dst = append(dst, `,"error_class":`...)
		dst = appendString(dst, string(r.ErrorClass))
	}
	if r.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendString(dst, r.Error)
	}
	if r.GeneratedText != "" {
		dst = append(dst, `,"generated_text":`...)
		dst = appendString(dst, r.GeneratedText)
	}
	if s := r.Server; s != nil {
		dst = append(dst, `,"server":{"arrival_ns":`...)
		dst = strconv.AppendInt(dst, s.ArrivalNs, 10)
		dst = append(dst, `,"queue_ns":`...)
		dst = strconv.AppendInt(dst, s.QueueNs, 10)
		dst = append(dst, `,"prefill_ns":`...)
		dst = strconv.AppendInt(dst, s.PrefillNs, 10)
		dst = append(dst, `,"decode_ns":`...)
		dst = strconv.AppendInt(dst, s.DecodeNs, 10)
		dst = append(dst, `,"preemptions":`...)
		dst = strconv.AppendInt(dst, int64(s.Preemptions), 10)
		dst = append(dst, `,"cached_tokens":`...)
		dst = strconv.AppendInt(dst, int64(s.CachedTokens), 10)
		dst = append(dst, '}')
	}
	return append(dst, "}\n"...)
}

func appendIntField(dst []byte, name string, v int) []byte {
	if v == 0 {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, int64(v), 10)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaping what JSON requires and
// replacing invalid UTF-8, so any error text a server sends stays one line.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			dst = append(dst, `\u202`...)
			dst = append(dst, hexDigits[r&0xf])
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// MarshalJSON encodes a chunk as [t_ns, tokens, visible].
func (c Chunk) MarshalJSON() ([]byte, error) {
	v := 0
	if c.Visible {
		v = 1
	}
	return fmt.Appendf(nil, "[%d,%d,%d]", c.T, c.Tokens, v), nil
}

// UnmarshalJSON decodes [t_ns, tokens, visible].
func (c *Chunk) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errors.New("chunk: want [t_ns,tokens,visible]")
	}
	parts := bytes.Split(b[1:len(b)-1], []byte{','})
	if len(parts) != 3 {
		return errors.New("chunk: want 3 numbers")
	}
	var vals [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(p)), 10, 64)
		if err != nil {
			return fmt.Errorf("chunk: %w", err)
		}
		vals[i] = v
	}
	if vals[1] < 0 || vals[1] > 1<<31-1 {
		return errors.New("chunk: token count out of range")
	}
	c.T, c.Tokens, c.Visible = vals[0], int32(vals[1]), vals[2] != 0
	return nil
}

// MarshalJSON uses the same encoding as AppendRecord.
func (r *Record) MarshalJSON() ([]byte, error) {
	b := AppendRecord(nil, r)
	return b[:len(b)-1], nil
}

// metaLine wraps Meta so a reader tells it from a Record.
type metaLine struct {
	Meta *Meta `json:"meta"`
}

// AppendMeta appends m as one {"meta":...} JSON line to dst.
func AppendMeta(dst []byte, m *Meta) ([]byte, error) {
	b, err := json.Marshal(metaLine{Meta: m})
	if err != nil {
		return dst, fmt.Errorf("encode meta: %w", err)
	}
	dst = append(dst, b...)
	return append(dst, '\n'), nil
}

// Writer appends records to a file the moment each request ends: every
// Write is one write call, so a killed run leaves every finished record
// readable. It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	n   int
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteMeta appends a meta line; a run writes one, first (see WriteEnd for
// the figures known only at the end).
func (w *Writer) WriteMeta(m *Meta) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b, err := AppendMeta(w.buf[:0], m)
	if err != nil {
		return err
	}
	w.buf = b
	_, w.err = w.w.Write(b)
	return w.err
}

// endLine closes a run's records: what became known only as it ended.
type endLine struct {
	End *RunEnd `json:"end"`
}

// RunEnd is the last line of a finished run's records file: the levels as
// they ran (delayed arrivals, the client's CPU, a sweep's chosen levels),
// which replace the planned ones of the meta line. A killed run has none,
// and its meta line still states the planned load.
type RunEnd struct {
	Levels []Level `json:"levels"`
}

// WriteEnd appends the end line for m: its levels as they ran.
func (w *Writer) WriteEnd(m *Meta) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b, err := json.Marshal(endLine{End: &RunEnd{Levels: m.Levels}})
	if err != nil {
		return fmt.Errorf("encode end line: %w", err)
	}
	w.buf = append(append(w.buf[:0], b...), '\n')
	_, w.err = w.w.Write(w.buf)
	return w.err
}

// Write appends one record. After the first write error every later call
// returns that error.
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = AppendRecord(w.buf[:0], r)
	_, w.err = w.w.Write(w.buf)
	if w.err == nil {
		w.n++
	}
	return w.err
}

// Count returns how many records were written successfully.
func (w *Writer) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Reader reads a records file line by line. It is not safe for concurrent
// use.
type Reader struct {
	sc       *bufio.Scanner
	name     string
	line     int
	meta     *Meta
	metas    int
	pending  []byte
	warnings []string
}

// NewReader returns a Reader of r; name is used in error messages.
func NewReader(r io.Reader, name string) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	return &Reader{sc: sc, name: name}
}

// Meta returns the latest meta line read so far (nil before any).
func (r *Reader) Meta() *Meta { return r.meta }

// Warnings returns non-fatal problems seen so far, such as a torn last line.
func (r *Reader) Warnings() []string { return r.warnings }

// Next reads the next record into rec. It returns io.EOF at the end. Meta
// lines are absorbed (see Meta). A line that does not parse is an error
// naming file and line, except the very last line of the file, which a
// killed writer may have torn: that one is skipped with a warning.
func (r *Reader) Next(rec *Record) error {
	for {
		var line []byte
		if r.pending != nil {
			line, r.pending = r.pending, nil
		} else {
			if !r.sc.Scan() {
				if err := r.sc.Err(); err != nil {
					return fmt.Errorf("%s:%d: %w", r.name, r.line+1, err)
				}
				return io.EOF
			}
			r.line++
			line = r.sc.Bytes()
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		err := r.parse(line, rec)
		if err == errMetaLine {
			continue
		}
		if err == nil {
			return nil
		}
		// Is this the last line? Only then may it be a torn write.
		lineNo := r.line
		if !r.sc.Scan() && r.sc.Err() == nil {
			r.warnings = append(r.warnings, fmt.Sprintf("%s:%d: skipped a torn last line (the writer was probably killed): %v", r.name, lineNo, err))
			return io.EOF
		}
		return fmt.Errorf("%s:%d: %v", r.name, lineNo, err)
	}
}

var errMetaLine = errors.New("meta line")

func (r *Reader) parse(line []byte, rec *Record) error {
	if bytes.HasPrefix(line, []byte(`{"meta"`)) {
		var ml metaLine
		if err := json.Unmarshal(line, &ml); err != nil {
			return fmt.Errorf("bad meta line: %v", err)
		}
		if ml.Meta == nil {
			return errors.New("empty meta line")
		}
		r.meta = ml.Meta
		r.metas++
		return errMetaLine
	}
	if bytes.HasPrefix(line, []byte(`{"end"`)) {
		var el endLine
		if err := json.Unmarshal(line, &el); err != nil || el.End == nil {
			return fmt.Errorf("bad end line: %v", err)
		}
		if r.meta == nil {
			r.warnings = append(r.warnings, fmt.Sprintf("%s:%d: an end line before any meta line: ignored", r.name, r.line))
			return errMetaLine
		}
		m := *r.meta
		m.Levels = el.End.Levels
		r.meta = &m
		return errMetaLine
	}
	*rec = Record{}
	if err := json.Unmarshal(line, rec); err != nil {
		return fmt.Errorf("bad record: %v", err)
	}
	if rec.ID == "" {
		return errors.New("bad record: no id")
	}
	return nil
}

// ReadAll reads every record of a records file. Meta is the last meta line
// (nil when the file has none); warnings report skipped torn lines.
func ReadAll(rd io.Reader, name string) (meta *Meta, recs []Record, warnings []string, err error) {
	r := NewReader(rd, name)
	for {
		var rec Record
		err := r.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return r.meta, recs, r.warnings, err
		}
		recs = append(recs, rec)
	}
	return r.meta, recs, r.warnings, nil
}
