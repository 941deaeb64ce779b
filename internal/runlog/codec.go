package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
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
	dst = appendIntField(dst, "replica", r.Replica)
	dst = appendIntField(dst, "priority", r.Priority)
	if r.Degraded != "" {
		dst = append(dst, `,"degraded":`...)
		dst = appendString(dst, r.Degraded)
	}
	if r.Model != "" {
		dst = append(dst, `,"model":`...)
		dst = appendString(dst, r.Model)
	}
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
	dst = appendIntField(dst, "redirects", r.Redirects)
	if r.WholeAnswer {
		dst = append(dst, `,"whole_answer":true`...)
	}
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
	if len(r.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i, tc := range r.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = appendString(dst, tc.ID)
			dst = append(dst, `,"name":`...)
			dst = appendString(dst, tc.Name)
			if tc.Arguments != "" {
				dst = append(dst, `,"arguments":`...)
				dst = appendString(dst, tc.Arguments)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if r.RetryAfterNs != 0 {
		dst = append(dst, `,"retry_after_ns":`...)
		dst = strconv.AppendInt(dst, r.RetryAfterNs, 10)
	}
	dst = appendIntField(dst, "attempt", r.Attempt)
	if r.RetryOf != "" {
		dst = append(dst, `,"retry_of":`...)
		dst = appendString(dst, r.RetryOf)
	}
	if r.Retried {
		dst = append(dst, `,"retried":true`...)
	}
	if r.ResponseID != "" {
		dst = append(dst, `,"response_id":`...)
		dst = appendString(dst, r.ResponseID)
	}
	dst = appendIntField(dst, "embeddings", r.Embeddings)
	if r.ToolLatencyNs != 0 {
		dst = append(dst, `,"tool_latency_ns":`...)
		dst = strconv.AppendInt(dst, r.ToolLatencyNs, 10)
	}
	if r.SessionID != "" {
		dst = append(dst, `,"session_id":`...)
		dst = appendString(dst, r.SessionID)
	}
	dst = appendIntField(dst, "turn", r.Turn)
	dst = appendIntField(dst, "tool_round", r.ToolRound)
	if r.History != "" {
		dst = append(dst, `,"history":`...)
		dst = appendString(dst, string(r.History))
	}
	dst = appendIntField(dst, "history_dropped", r.HistoryDropped)
	if r.JobNode != "" {
		dst = appendJob(dst, r)
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
		if s.QueueUnknown {
			dst = append(dst, `,"queue_unknown":true`...)
		}
		if s.KVTransferNs != 0 {
			dst = append(dst, `,"kv_transfer_ns":`...)
			dst = strconv.AppendInt(dst, s.KVTransferNs, 10)
		}
		dst = appendIntField(dst, "decode_replica", s.DecodeReplica)
		dst = append(dst, '}')
	}
	if r.Hop != nil {
		dst = appendHop(dst, r.Hop)
	}
	return append(dst, "}\n"...)
}

// appendJob appends the fields of a job graph's request.
func appendJob(dst []byte, r *Record) []byte {
	dst = append(dst, `,"job_node":`...)
	dst = appendString(dst, r.JobNode)
	if len(r.JobAfter) > 0 {
		dst = append(dst, `,"job_after":[`...)
		for i, a := range r.JobAfter {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, a)
		}
		dst = append(dst, ']')
	}
	if r.JobGapNs != 0 {
		dst = append(dst, `,"job_gap_ns":`...)
		dst = strconv.AppendInt(dst, r.JobGapNs, 10)
	}
	if r.JobImpliedCached != nil {
		dst = append(dst, `,"job_implied_cached":`...)
		dst = strconv.AppendInt(dst, int64(*r.JobImpliedCached), 10)
	}
	return dst
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
	// Analysis is how the run judged itself, complete only at the end (a
	// sweep's levels chosen after a capacity probe); it replaces the meta
	// line's.
	Analysis *Analysis `json:"analysis,omitempty"`
}

// WriteEnd appends the end line for m: its levels as they ran, and its
// analysis settings.
func (w *Writer) WriteEnd(m *Meta) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b, err := json.Marshal(endLine{End: &RunEnd{Levels: m.Levels, Analysis: m.Analysis}})
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

// Bounds on what a Reader accepts, so that no value read can break the
// arithmetic done on it later: differences of two times, and sums of
// token counts over any file that fits on a disk, stay within int64.
const (
	// MaxTimeNs bounds every time of a record, ns (about 36.5 years), on
	// either side of the run's start.
	MaxTimeNs = 1 << 60
	// MaxTokens bounds every token count of a record, and the sum of its
	// chunks' tokens.
	MaxTokens = 1<<31 - 1
	// MaxLevel is the highest load level index a record may have.
	MaxLevel = 1<<16 - 1
	// MaxReplica is the highest replica number a record may have.
	MaxReplica = 1<<16 - 1
	// MaxPriority is the highest priority class a record may have.
	MaxPriority = 1<<16 - 1
	// MaxRequestRate bounds a level's arrival rate, requests/s: ten
	// million a second, far past any server, far short of a rate whose
	// gaps round to nothing.
	MaxRequestRate = 1e7
	// MaxBurstiness bounds a level's gamma shape (1 is Poisson; 1e12 is
	// a metronome, as tests use it).
	MaxBurstiness = 1e15
	// MaxConcurrency bounds a level's in-flight cap.
	MaxConcurrency = 1 << 24
)

// OwnLinePrefix starts every line goodput writes beside records that go
// to its stdout (its notes and summary, on stderr): a log that merges the
// two streams, as kubectl logs does of a shard pod's, is still a records
// file, those lines being skipped and counted rather than bad.
const OwnLinePrefix = "goodput: "

// maxLineWarnings is how many skipped lines a Reader names one by one;
// the rest are only counted.
const maxLineWarnings = 20

// ReadOptions say how a Reader, and ReadRecordsFile, treat a records
// file's problems. The zero value is the strict reader: a bad line other
// than a torn last one is an error, and so is a file of several runs read
// with ReadRecordsFile.
type ReadOptions struct {
	// SkipBadLines skips every line that does not parse or holds a value
	// out of range, anywhere in the file, with a warning naming file, line
	// and reason, instead of failing on the first.
	SkipBadLines bool
	// Merge lets ReadRecordsFile accept a file that holds several runs
	// (meta lines describing different runs, as when files are
	// concatenated) and return each run apart, to be merged with Merge;
	// without it such a file is an error wrapping ErrSeveralRuns. A Reader
	// and ReadRuns keep a file's runs apart whatever it says.
	Merge bool
}

// BadLineError is the error of a line the Reader rejects: it does not
// parse, or a value is out of range (see MaxTimeNs, MaxTokens, MaxLevel).
type BadLineError struct {
	// Name is the file's name and Line the line's number, from 1.
	Name string
	Line int
	// Err says what is wrong with the line.
	Err error
}

func (e *BadLineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }

func (e *BadLineError) Unwrap() error { return e.Err }

// RunInfo describes one run of a records file. A file normally holds one
// run; files concatenated into one (cat a.jsonl b.jsonl) hold several,
// each starting at its own meta line.
type RunInfo struct {
	// Meta is the run's meta line, with its end line's levels when it has
	// one; nil for records before any meta line.
	Meta *Meta
	// Line is the line of the run's meta line (of its first record when
	// it has none).
	Line int
	// Records counts the records read so far that belong to the run.
	Records int
	// Scrapes are the run's scrapes of the server's metrics, in file order.
	Scrapes []Scrape
}

// Reader reads a records file line by line. It is not safe for concurrent
// use.
//
// A meta line starts a new run unless it describes the run already being
// read (the same start time, command, target, model and workload: an older
// producer's updated meta line at the end), which it then replaces; see
// Runs and Run.
type Reader struct {
	br       *bufio.Reader
	buf      []byte // the current line
	maxLine  int    // MaxLineBytes; tests lower it
	err      error  // the first read error, sticky
	name     string
	opts     ReadOptions
	line     int
	runs     []RunInfo
	pending  []byte
	pendNo   int
	pendLong bool // the pending line was too long
	hasPend  bool
	warnings []string
	skipped  int
	// own counts the lines of goodput's own output skipped (OwnLinePrefix).
	own  int
	done bool
}

// MaxLineBytes bounds a line of a records file: 64 MiB, far above any
// record a run writes (a 128k-token answer with its text and every chunk
// is a few MiB), so that one huge line costs a reader at most that much
// memory to refuse, not several times its size to read.
const MaxLineBytes = 64 << 20

// lineTooLong is the error of a line over the Reader's bound.
type lineTooLong int

func (n lineTooLong) Error() string {
	return fmt.Sprintf("line over %d bytes: too long for a record (a record is at most a few MiB)", int(n))
}

// NewReader returns a strict Reader of r; name is used in error messages.
func NewReader(r io.Reader, name string) *Reader {
	return NewReaderOptions(r, name, ReadOptions{})
}

// NewReaderOptions returns a Reader of r that treats bad lines as o says;
// name is used in messages.
func NewReaderOptions(r io.Reader, name string, o ReadOptions) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), maxLine: MaxLineBytes, name: name, opts: o}
}

// readLine reads the next line, without its end, into r.buf. A line over
// r.maxLine bytes is read past without being kept (long reports it), so
// memory stays bounded whatever the file holds. It returns io.EOF when no
// line is left.
func (r *Reader) readLine() (line []byte, long bool, err error) {
	if r.err != nil {
		return nil, false, r.err
	}
	r.buf = r.buf[:0]
	got := false
	for {
		frag, err := r.br.ReadSlice('\n')
		got = got || len(frag) > 0
		if !long {
			if len(r.buf)+len(frag) > r.maxLine+2 { // room for CR LF
				long, r.buf = true, r.buf[:0]
				if cap(r.buf) > 1<<20 {
					r.buf = nil // do not keep a buffer grown for it
				}
			} else {
				r.buf = append(r.buf, frag...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && got:
			return r.buf, long, nil // a last line without its newline
		case err != nil:
			r.err = err
			return nil, false, err
		}
		return r.buf, long, nil
	}
}

// Meta returns the meta line of the run being read: the latest meta line
// read so far (nil before any).
func (r *Reader) Meta() *Meta {
	if len(r.runs) == 0 {
		return nil
	}
	return r.runs[len(r.runs)-1].Meta
}

// Runs returns the runs seen so far, in file order.
func (r *Reader) Runs() []RunInfo { return r.runs }

// Run returns the index in Runs of the run the last record read belongs
// to (-1 before any line).
func (r *Reader) Run() int { return len(r.runs) - 1 }

// Warnings returns non-fatal problems seen so far, such as a torn last line
// or, with SkipBadLines, the lines skipped.
func (r *Reader) Warnings() []string { return r.warnings }

// Skipped returns how many bad lines were skipped (SkipBadLines).
func (r *Reader) Skipped() int { return r.skipped }

// Next reads the next record into rec. It returns io.EOF at the end. Meta
// and end lines are absorbed (see Meta and Runs). A line that does not
// parse, or holds a value out of range, is a *BadLineError naming file and
// line, or with SkipBadLines a warning, except a torn last line: the
// unfinished start of a JSON object as a killed writer leaves it, which is
// skipped with a warning. A last line that is complete, or not JSON at all
// (NUL bytes, garbage), is not torn but bad.
func (r *Reader) Next(rec *Record) error {
	for {
		line, no, long, err := r.nextLine()
		if err != nil {
			if err == io.EOF {
				r.finish()
			}
			return err
		}
		if long {
			err = lineTooLong(r.maxLine)
		} else {
			err = r.parse(line, no, rec)
		}
		if err == errMetaLine {
			continue
		}
		if err == nil {
			r.ensureRun(no)
			r.runs[len(r.runs)-1].Records++
			return nil
		}
		if !long && bytes.HasPrefix(line, []byte(OwnLinePrefix)) {
			r.own++
			continue
		}
		torn := !long && truncatedJSON(line) // before peeking reuses line's buffer
		if !r.peek() && torn {
			r.warnings = append(r.warnings, fmt.Sprintf("%s:%d: skipped a torn last line (the writer was probably killed): %v", r.name, no, err))
			r.finish()
			return io.EOF
		}
		if !r.opts.SkipBadLines {
			return &BadLineError{Name: r.name, Line: no, Err: err}
		}
		r.skipped++
		if r.skipped <= maxLineWarnings {
			r.warnings = append(r.warnings, fmt.Sprintf("%s:%d: skipped a bad line: %v", r.name, no, err))
		}
	}
}

// nextLine returns the next non-blank line, trimmed, and its number; long
// says the line was over the bound (and is not returned).
func (r *Reader) nextLine() ([]byte, int, bool, error) {
	if r.hasPend {
		r.hasPend = false
		return r.pending, r.pendNo, r.pendLong, nil
	}
	for {
		line, long, err := r.readLine()
		if err == io.EOF {
			return nil, r.line, false, io.EOF
		}
		if err != nil {
			// Not a BadLineError: reading stops here, there is no skipping it.
			return nil, r.line + 1, false, fmt.Errorf("%s:%d: %w", r.name, r.line+1, err)
		}
		r.line++
		if line = bytes.TrimSpace(line); len(line) > 0 || long {
			return line, r.line, long, nil
		}
	}
}

// peek reads the next non-blank line into pending and reports whether
// there is one (true too when reading fails: the line is not known to be
// the last, and the failure is reported by the next read).
func (r *Reader) peek() bool {
	line, no, long, err := r.nextLine()
	switch {
	case err == io.EOF:
		return false
	case err != nil:
		return true // r.err is sticky: the next read reports it
	}
	r.pending, r.pendNo, r.pendLong, r.hasPend = bytes.Clone(line), no, long, true
	return true
}

// finish adds the count of skipped lines to the warnings, once, at the end.
func (r *Reader) finish() {
	if r.done {
		return
	}
	r.done = true
	if r.own > 0 {
		r.warnings = append(r.warnings, fmt.Sprintf("%s: skipped %d line(s) of goodput's own notes and summary (a log that merges its stderr with the records)", r.name, r.own))
	}
	if r.skipped == 0 {
		return
	}
	msg := fmt.Sprintf("%s: skipped %d bad line(s) in all", r.name, r.skipped)
	if r.skipped > maxLineWarnings {
		msg += fmt.Sprintf(" (the first %d are named above)", maxLineWarnings)
	}
	r.warnings = append(r.warnings, msg)
}

// truncatedJSON reports whether line is the unfinished start of a JSON
// object, as a writer killed in mid-write leaves its last line.
func truncatedJSON(line []byte) bool {
	if len(line) == 0 || line[0] != '{' || bytes.IndexByte(line, 0) >= 0 {
		return false
	}
	var v json.RawMessage
	err := json.NewDecoder(bytes.NewReader(line)).Decode(&v)
	return errors.Is(err, io.ErrUnexpectedEOF)
}

// ensureRun opens the first run, without a meta line, for a record read
// before any meta line.
func (r *Reader) ensureRun(no int) {
	if len(r.runs) == 0 {
		r.runs = append(r.runs, RunInfo{Line: no})
	}
}

// startRun takes a meta line: it describes the current run (which it
// then replaces) or starts the next.
func (r *Reader) startRun(m *Meta, no int) {
	if n := len(r.runs); n > 0 {
		cur := &r.runs[n-1]
		if cur.Meta == nil && cur.Records == 0 {
			cur.Meta, cur.Line = m, no
			return
		}
		if cur.Meta != nil && RunDiff(cur.Meta, m) == "" {
			cur.Meta = m
			return
		}
	}
	r.runs = append(r.runs, RunInfo{Meta: m, Line: no})
}

var errMetaLine = errors.New("meta line")

func (r *Reader) parse(line []byte, no int, rec *Record) error {
	if bytes.HasPrefix(line, []byte(`{"meta"`)) {
		var ml metaLine
		if err := json.Unmarshal(line, &ml); err != nil {
			return fmt.Errorf("bad meta line: %v", err)
		}
		if ml.Meta == nil {
			return errors.New("empty meta line")
		}
		if err := validLevels(ml.Meta.Levels); err != nil {
			return fmt.Errorf("bad meta line: %v", err)
		}
		r.startRun(ml.Meta, no)
		return errMetaLine
	}
	if bytes.HasPrefix(line, []byte(`{"scrape"`)) {
		sc, err := parseScrape(line)
		if err != nil {
			return err
		}
		r.ensureRun(no)
		run := &r.runs[len(r.runs)-1]
		run.Scrapes = append(run.Scrapes, *sc)
		return errMetaLine
	}
	if bytes.HasPrefix(line, []byte(`{"end"`)) {
		var el endLine
		if err := json.Unmarshal(line, &el); err != nil {
			return fmt.Errorf("bad end line: %v", err)
		}
		if el.End == nil {
			return errors.New("bad end line: no end object")
		}
		if err := validLevels(el.End.Levels); err != nil {
			return fmt.Errorf("bad end line: %v", err)
		}
		m := r.Meta()
		if m == nil {
			r.warnings = append(r.warnings, fmt.Sprintf("%s:%d: an end line before any meta line: ignored", r.name, no))
			return errMetaLine
		}
		mm := *m
		mm.Levels = el.End.Levels
		if el.End.Analysis != nil {
			mm.Analysis = el.End.Analysis
		}
		r.runs[len(r.runs)-1].Meta = &mm
		return errMetaLine
	}
	*rec = Record{}
	if err := json.Unmarshal(line, rec); err != nil {
		return fmt.Errorf("bad record: %v", err)
	}
	if rec.ID == "" {
		return errors.New("bad record: no id")
	}
	if err := validRecord(rec); err != nil {
		return fmt.Errorf("bad record %q: %v", clip(rec.ID), err)
	}
	return nil
}

// clip shortens a record id for a message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// validRecord checks that every time and count of rec is within the
// Reader's bounds.
func validRecord(rec *Record) error {
	if rec.Level < 0 || rec.Level > MaxLevel {
		return fmt.Errorf("level %d out of range [0, %d]", rec.Level, MaxLevel)
	}
	if rec.Replica < 0 || rec.Replica > MaxReplica {
		return fmt.Errorf("replica %d out of range [0, %d]", rec.Replica, MaxReplica)
	}
	if rec.Priority < 0 || rec.Priority > MaxPriority {
		return fmt.Errorf("priority %d out of range [0, %d]", rec.Priority, MaxPriority)
	}
	times := func(name string, t int64) error {
		if t < -MaxTimeNs || t > MaxTimeNs {
			return fmt.Errorf("%s %d out of range (at most %d ns, about 36 years, either way)", name, t, int64(MaxTimeNs))
		}
		return nil
	}
	tokens := func(name string, n int64) error {
		if n < 0 || n > MaxTokens {
			return fmt.Errorf("%s %d out of range [0, %d]", name, n, MaxTokens)
		}
		return nil
	}
	errs := []error{
		times("intended_ns", rec.Intended), times("sent_ns", rec.Sent), times("connect_ns", rec.ConnectNs), times("end_ns", rec.End),
		tokens("prompt_tokens", int64(rec.PromptTokens)), tokens("completion_tokens", int64(rec.CompletionTokens)),
		tokens("reasoning_tokens", int64(rec.ReasoningTokens)), tokens("cached_tokens", int64(rec.CachedTokens)),
		tokens("requested_prompt_tokens", int64(rec.RequestedPromptTokens)), tokens("max_tokens", int64(rec.MaxTokens)),
		tokens("redirects", int64(rec.Redirects)), tokens("turn", int64(rec.Turn)), tokens("tool_round", int64(rec.ToolRound)),
		tokens("history_dropped", int64(rec.HistoryDropped)), tokens("embeddings", int64(rec.Embeddings)), tokens("attempt", int64(rec.Attempt)),
		times("retry_after_ns", rec.RetryAfterNs),
	}
	if rec.ToolLatencyNs < 0 || rec.ToolLatencyNs > MaxTimeNs {
		errs = append(errs, fmt.Errorf("tool_latency_ns %d out of range [0, %d]", rec.ToolLatencyNs, int64(MaxTimeNs)))
	}
	if rec.JobGapNs < 0 || rec.JobGapNs > MaxTimeNs {
		errs = append(errs, fmt.Errorf("job_gap_ns %d out of range [0, %d]", rec.JobGapNs, int64(MaxTimeNs)))
	}
	if c := rec.JobImpliedCached; c != nil {
		errs = append(errs, tokens("job_implied_cached", int64(*c)))
	}
	if s := rec.Server; s != nil {
		errs = append(errs, times("server.arrival_ns", s.ArrivalNs), times("server.queue_ns", s.QueueNs),
			times("server.prefill_ns", s.PrefillNs), times("server.decode_ns", s.DecodeNs),
			tokens("server.preemptions", int64(s.Preemptions)), tokens("server.cached_tokens", int64(s.CachedTokens)),
			times("server.kv_transfer_ns", s.KVTransferNs))
		if s.DecodeReplica < 0 || s.DecodeReplica > MaxReplica {
			errs = append(errs, fmt.Errorf("server.decode_replica %d out of range [0, %d]", s.DecodeReplica, MaxReplica))
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	switch {
	case rec.SessionID == "" && rec.JobNode != "":
		return errors.New("job_node without a session_id (the job)")
	case rec.SessionID == "" && (rec.Turn != 0 || rec.ToolRound != 0 || rec.History != "" || rec.HistoryDropped != 0):
		return errors.New("turn, tool_round or history without a session_id")
	case rec.SessionID != "" && rec.Turn < 1:
		return fmt.Errorf("session %q: turn %d; turns count from 1", clip(rec.SessionID), rec.Turn)
	case rec.Attempt == 1 || (rec.Attempt > 1) != (rec.RetryOf != ""):
		return fmt.Errorf("attempt %d with retry_of %q: a retry has an attempt from 2 and the id it retries", rec.Attempt, clip(rec.RetryOf))
	case rec.History != "" && rec.History != HistoryServer && rec.History != HistoryRecorded && rec.History != HistoryChained:
		return fmt.Errorf("history %q: want server, recorded or chained", clip(string(rec.History)))
	}
	// A stream cannot answer before it was sent: such times would show
	// as negative latencies (a TTFT of −1,000,000 ms).
	if rec.End != 0 && rec.End < rec.Sent {
		return fmt.Errorf("end_ns %d is before sent_ns %d", rec.End, rec.Sent)
	}
	var sum int64
	for i, c := range rec.Chunks {
		if err := times(fmt.Sprintf("chunk %d's time", i), c.T); err != nil {
			return err
		}
		if c.T < rec.Sent {
			return fmt.Errorf("chunk %d's time %d is before sent_ns %d", i, c.T, rec.Sent)
		}
		if c.Tokens < 0 {
			return fmt.Errorf("chunk %d: token count %d out of range", i, c.Tokens)
		}
		sum += int64(c.Tokens)
	}
	if sum > MaxTokens {
		return fmt.Errorf("the chunks carry %d tokens in all, out of range [0, %d]", sum, MaxTokens)
	}
	return nil
}

// validLevels checks that the levels' loads are within the Reader's
// bounds, naming the first level (from 1) and field that is not.
func validLevels(levels []Level) error {
	for i, l := range levels {
		var err error
		switch {
		case !(l.RequestRate >= 0 && l.RequestRate <= MaxRequestRate):
			err = fmt.Errorf("request_rate %g out of range [0, %g]", l.RequestRate, float64(MaxRequestRate))
		case !(l.Burstiness >= 0 && l.Burstiness <= MaxBurstiness):
			err = fmt.Errorf("burstiness %g out of range [0, %g]", l.Burstiness, float64(MaxBurstiness))
		case l.MaxConcurrency < 0 || l.MaxConcurrency > MaxConcurrency:
			err = fmt.Errorf("max_concurrency %d out of range [0, %d]", l.MaxConcurrency, MaxConcurrency)
		case l.NumPrompts < 0 || l.NumWarmups < 0 || l.DelayedArrivals < 0:
			err = fmt.Errorf("num_prompts %d, num_warmups %d, delayed_arrivals %d: counts are never negative", l.NumPrompts, l.NumWarmups, l.DelayedArrivals)
		case !(l.DurationS >= 0 && l.DurationS <= MaxTimeNs/1e9):
			err = fmt.Errorf("duration_s %g out of range [0, %g]", l.DurationS, float64(MaxTimeNs/1e9))
		case l.InputLen < 0 || l.InputLen > MaxTokens || l.OutputLen < 0 || l.OutputLen > MaxTokens:
			err = fmt.Errorf("input_len %d, output_len %d out of range [0, %d]", l.InputLen, l.OutputLen, MaxTokens)
		case !(l.ClientCPU >= 0 && l.ClientCPU <= 1):
			err = fmt.Errorf("client_cpu %g out of range [0, 1]", l.ClientCPU)
		case l.Ramp != nil && !(l.Ramp.StartRPS >= 0 && l.Ramp.StartRPS <= MaxRequestRate && l.Ramp.EndRPS >= 0 && l.Ramp.EndRPS <= MaxRequestRate):
			err = fmt.Errorf("ramp from %g to %g requests/s out of range [0, %g]", l.Ramp.StartRPS, l.Ramp.EndRPS, float64(MaxRequestRate))
		case l.Fleet != nil:
			err = validFleet(l.Fleet)
		}
		if err != nil {
			return fmt.Errorf("level %d: %v", i+1, err)
		}
	}
	return nil
}

// maxFleetReplicas bounds the replicas a level's fleet figures describe,
// as the cluster does.
const maxFleetReplicas = 1 << 16

// validFleet checks a level's fleet figures: shares in [0, 1], counts and
// times never negative, a bounded fleet.
func validFleet(f *LevelFleet) error {
	if len(f.KVPeak) > maxFleetReplicas || len(f.Routed) > maxFleetReplicas {
		return fmt.Errorf("fleet of %d replicas: at most %d", max(len(f.KVPeak), len(f.Routed)), maxFleetReplicas)
	}
	for _, p := range f.KVPeak {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("fleet kv_peak %g out of range [0, 1]", p)
		}
	}
	for _, n := range f.Routed {
		if n < 0 {
			return fmt.Errorf("fleet routed %d: counts are never negative", n)
		}
	}
	a := f.Autoscale
	if a == nil {
		return nil
	}
	switch {
	case a.Min < 0 || a.Max < a.Min || a.Max > maxFleetReplicas:
		return fmt.Errorf("autoscale min %d, max %d: want 0 ≤ min ≤ max ≤ %d", a.Min, a.Max, maxFleetReplicas)
	case a.Start < 0 || a.Peak < 0 || a.Final < 0 || a.Decisions < 0 || a.ProvisionDelayNs < 0 || a.CooldownNs < 0:
		return fmt.Errorf("autoscale counts and delays are never negative")
	case !(a.GPUHours >= 0) || math.IsInf(a.GPUHours, 0) || math.IsNaN(a.Threshold) || math.IsNaN(a.DownThreshold):
		return fmt.Errorf("autoscale gpu_hours %g, thresholds %g and %g: want numbers, hours ≥ 0", a.GPUHours, a.Threshold, a.DownThreshold)
	case len(a.Timeline) > MaxFleetTimeline:
		return fmt.Errorf("autoscale timeline of %d points: at most %d", len(a.Timeline), MaxFleetTimeline)
	}
	for _, p := range a.Timeline {
		if p.AtNs < 0 || p.AtNs > MaxTimeNs || p.Active < 0 || p.Provisioning < 0 || p.Draining < 0 {
			return fmt.Errorf("autoscale timeline point at %d ns (%d active, %d provisioning, %d draining): times and counts are never negative", p.AtNs, p.Active, p.Provisioning, p.Draining)
		}
	}
	return nil
}

// MaxFleetTimeline bounds the points of an autoscaler's timeline a level
// stores.
const MaxFleetTimeline = 1 << 20

// RunDiff names the first property in which a and b describe different
// runs, with both values, e.g. "model (llama vs qwen)"; "" when they
// describe the same run (levels, tokenizer note and version may differ:
// what a run learns as it goes).
func RunDiff(a, b *Meta) string {
	if !a.Started.Equal(b.Started) {
		return fmt.Sprintf("start time (%s vs %s)", a.Started.Format(time.RFC3339Nano), b.Started.Format(time.RFC3339Nano))
	}
	for _, f := range []struct{ name, a, b string }{
		{"tool", a.Tool, b.Tool}, {"command", a.Command, b.Command}, {"target", a.Target, b.Target},
		{"backend", a.Backend, b.Backend}, {"endpoint", a.Endpoint, b.Endpoint}, {"model", a.Model, b.Model},
		{"dataset", a.Dataset, b.Dataset},
		{"seed", strconv.FormatInt(a.Seed, 10), strconv.FormatInt(b.Seed, 10)},
		{"no_stream", strconv.FormatBool(a.NoStream), strconv.FormatBool(b.NoStream)},
		{"simulated", a.Simulated.canonical(), b.Simulated.canonical()},
		{"metadata", canonicalJSON(a.Metadata), canonicalJSON(b.Metadata)},
	} {
		if f.a != f.b {
			return fmt.Sprintf("%s (%s vs %s)", f.name, orNone(f.a), orNone(f.b))
		}
	}
	return ""
}

// canonicalJSON renders v as JSON with sorted keys, "" for an empty map.
func canonicalJSON[M ~map[string]V, V any](m M) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	return string(b)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	if len(s) > 80 {
		return clip(s)
	}
	return s
}

// ReadAll reads every record of a records file with a strict Reader. Meta
// is the last meta line (nil when the file has none); warnings report
// skipped torn lines. A file of several runs (see Reader) is read as one:
// use ReadRuns to keep them apart.
func ReadAll(rd io.Reader, name string) (meta *Meta, recs []Record, warnings []string, err error) {
	r := NewReader(rd, name)
	for {
		var rec Record
		err := r.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return r.Meta(), recs, r.warnings, err
		}
		recs = append(recs, rec)
	}
	return r.Meta(), recs, r.warnings, nil
}

// Run is one run of a records file as ReadRuns returns it.
type Run struct {
	RunInfo
	// Records are the run's records in file order.
	Records []Record
}

// ReadRuns reads every record of a records file, kept apart by run (see
// Reader), in file order; a run may have no records. Warnings report
// skipped lines.
func ReadRuns(rd io.Reader, name string, o ReadOptions) ([]Run, []string, error) {
	r := NewReaderOptions(rd, name, o)
	var recs [][]Record
	for {
		var rec Record
		err := r.Next(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, r.warnings, err
		}
		i := r.Run()
		for len(recs) <= i {
			recs = append(recs, nil)
		}
		recs[i] = append(recs[i], rec)
	}
	runs := make([]Run, len(r.runs))
	for i, info := range r.runs {
		runs[i] = Run{RunInfo: info}
		if i < len(recs) {
			runs[i].Records = recs[i]
		}
	}
	return runs, r.warnings, nil
}
