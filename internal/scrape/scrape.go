// Package scrape polls Prometheus /metrics endpoints while a benchmark runs
// and hands back each response body stamped with the run clock, so the
// server's own view (queue length, KV-cache use, GPU power) can be stored
// beside the client's records on the same timeline. It only fetches and
// timestamps; turning bodies into metrics is another package's job.
//
// The scraper must never hold up the request path: it has its own
// goroutines (one per target), its own connection pool, no queue, and a
// bounded wait for every endpoint, so a slow, dead or garbage-spewing
// endpoint costs the benchmark nothing but a Sample with an error.
//
// Run and Probe are safe for concurrent use; Run calls emit from several
// goroutines at once (see Run).
package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults and limits for Config.
const (
	// DefaultInterval is the time between scrapes of one target when
	// Config.Interval is zero: Prometheus's own default scrape interval is
	// coarser (15 s), but a benchmark level lasts tens of seconds.
	DefaultInterval = time.Second
	// MaxDefaultTimeout caps the default Timeout, min(Interval, 2 s): a
	// healthy exporter answers in milliseconds, so waiting longer only
	// hides a sick one.
	MaxDefaultTimeout = 2 * time.Second
	// MinInterval is the shortest Interval accepted: faster scraping
	// would load the server under test more than it tells about it.
	MinInterval = time.Millisecond
	// DefaultMaxBody is the largest body read when Config.MaxBody is
	// zero, in bytes (16 MiB); a vLLM /metrics body is about 100 KiB, a
	// DCGM one smaller.
	DefaultMaxBody = 16 << 20
)

// Accept is the Accept header every scrape sends: the Prometheus text
// format (version 0.0.4), which every exporter speaks, so the parser has
// one format to read. Sample.ContentType says what actually came.
const Accept = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// userAgent lets a server's access log tell scrapes from benchmark traffic.
const userAgent = "goodput-scrape"

// Target is one endpoint to scrape.
type Target struct {
	// Name identifies the target in every Sample ("server", "dcgm"); it
	// must be non-empty and unique within a Config.
	Name string
	// URL is the full http(s) URL of the endpoint,
	// e.g. "http://127.0.0.1:8000/metrics".
	URL string
}

// Sample is the outcome of one scrape of one target. All times are ns on
// the run clock (Config.Now).
type Sample struct {
	// Target is the Target's Name.
	Target string
	// Intended is the tick the scrape belonged to: a multiple of
	// Interval on the run clock. At − Intended is how late it finished.
	Intended int64
	// At is when the response body had been read in full, or when the
	// scrape failed.
	At int64
	// Latency is the time from sending the request to At: the server's
	// answer time plus transfer. A server-side timestamp taken while it
	// rendered the body lies within [At − Latency, At].
	Latency time.Duration
	// Skipped counts the ticks just before this one at which no scrape
	// started, because the previous scrape (or emit) was still running:
	// one target never has two scrapes in flight. 0 means no gap.
	Skipped int
	// Status is the HTTP status code; 0 when no response came.
	Status int
	// ContentType is the response's Content-Type header, which tells the
	// parser the exposition format.
	ContentType string
	// Body is the whole response body on success, nil on error. It is a
	// fresh slice for every Sample: the receiver owns it.
	Body []byte
	// Err says why the scrape failed, in one line (connection refused, a
	// timeout, an HTTP status, a body too large); nil on success. A 200
	// answer whose body is not valid exposition text is a success here:
	// judging the body is the parser's job.
	Err error
}

// Config says what to scrape and how often.
type Config struct {
	// Targets are the endpoints, each scraped on its own goroutine; at
	// least one.
	Targets []Target
	// Interval is the time between ticks of every target; ticks fall on
	// multiples of Interval on the run clock, so samples line up with
	// level boundaries and across targets. 0 means DefaultInterval; at
	// least MinInterval.
	Interval time.Duration
	// Timeout bounds one scrape, connect to last body byte. 0 means
	// min(Interval, MaxDefaultTimeout), with which a slow target never
	// skips a tick; a longer one makes an overrunning scrape skip ticks
	// (Sample.Skipped).
	Timeout time.Duration
	// MaxBody is the largest body accepted, in bytes; a larger one is
	// an error (ErrTooLarge), read no further. 0 means DefaultMaxBody.
	MaxBody int64
	// Now is the run clock: monotonic ns from the run's start, the clock
	// the records use. nil means a clock that starts when Run is called.
	Now func() int64
	// Client sends the scrapes. nil means a client of Run's own, with its
	// own connection pool, closed when Run returns. Never pass the
	// benchmark's client: a scrape would then take, or wait for, a
	// connection the request path needs.
	Client *http.Client
}

// ConfigError is a bad value in Config. Field is the Go name of the field
// at fault, indexed for a target ("Targets[1].URL"), so that the caller
// can say where the value came from (the CLI names the flag).
type ConfigError struct {
	// Field is the Config field's Go name.
	Field string
	// Value is the field's value as given.
	Value string
	// Err says what is wrong with it.
	Err error
}

// Error names the field, its value (quoted) and the problem,
// e.g. `scrape: Targets[0].URL "localhost:9400": want http(s)://host[:port]/path`.
func (e *ConfigError) Error() string {
	return "scrape: " + e.Field + " " + strconv.Quote(e.Value) + ": " + e.Err.Error()
}

// Unwrap returns the problem.
func (e *ConfigError) Unwrap() error { return e.Err }

// Errors a Sample (or Probe) may carry, wrapped with detail; test with
// errors.Is. Network failures carry the net package's errors instead
// (errors.Is(err, syscall.ECONNREFUSED) for a refused connection).
var (
	// ErrTimeout is a scrape that outlived Config.Timeout.
	ErrTimeout = errors.New("timeout")
	// ErrTooLarge is a body over Config.MaxBody.
	ErrTooLarge = errors.New("body too large")
	// ErrNotMetrics is a Probe answered with a web page or JSON, not
	// an exposition: a server that answers any path with its UI.
	ErrNotMetrics = errors.New("not a metrics exposition")
)

// StatusError is an answer other than 200 OK.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// Snippet is the start of the body's first line (up to 80 bytes),
	// which often says why ("unauthorized").
	Snippet string
}

// Error reads e.g. `HTTP 500 Internal Server Error: "engine dead"`.
func (e *StatusError) Error() string {
	s := "HTTP " + strconv.Itoa(e.Code)
	if t := http.StatusText(e.Code); t != "" {
		s += " " + t
	}
	if e.Snippet != "" {
		s += ": " + strconv.Quote(e.Snippet)
	}
	return s
}

// withDefaults checks cfg and fills in the zero values.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Targets) == 0 {
		return cfg, &ConfigError{Field: "Targets", Value: "", Err: errors.New("need at least one target")}
	}
	seen := make(map[string]bool, len(cfg.Targets))
	for i, t := range cfg.Targets {
		field := "Targets[" + strconv.Itoa(i) + "]"
		switch {
		case t.Name == "":
			return cfg, &ConfigError{Field: field + ".Name", Value: t.Name, Err: errors.New("empty")}
		case seen[t.Name]:
			return cfg, &ConfigError{Field: field + ".Name", Value: t.Name, Err: errors.New("used by an earlier target")}
		}
		seen[t.Name] = true
		if err := checkURL(t.URL); err != nil {
			return cfg, &ConfigError{Field: field + ".URL", Value: t.URL, Err: err}
		}
	}
	switch {
	case cfg.Interval == 0:
		cfg.Interval = DefaultInterval
	case cfg.Interval < MinInterval:
		return cfg, &ConfigError{Field: "Interval", Value: cfg.Interval.String(), Err: fmt.Errorf("want at least %v", MinInterval)}
	}
	switch {
	case cfg.Timeout == 0:
		cfg.Timeout = min(cfg.Interval, MaxDefaultTimeout)
	case cfg.Timeout < 0:
		return cfg, &ConfigError{Field: "Timeout", Value: cfg.Timeout.String(), Err: errors.New("negative")}
	}
	switch {
	case cfg.MaxBody == 0:
		cfg.MaxBody = DefaultMaxBody
	case cfg.MaxBody < 0:
		return cfg, &ConfigError{Field: "MaxBody", Value: strconv.FormatInt(cfg.MaxBody, 10), Err: errors.New("negative")}
	}
	if cfg.Now == nil {
		start := time.Now()
		cfg.Now = func() int64 { return int64(time.Since(start)) }
	}
	return cfg, nil
}

// checkURL accepts an absolute http(s) URL with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want http(s)://host[:port]/path")
	}
	return nil
}

// Run scrapes every target once per tick until ctx ends, and returns nil
// then; an error only for a bad Config (a *ConfigError) or a nil emit.
//
// The first scrape of each target starts at once, so a run has a baseline
// from its start, as the tick at or before Now(); the later ones start at
// their ticks, the multiples of Interval on the run clock. A scrape still
// running at a tick makes that tick a gap, counted in the next Sample's
// Skipped: one target never has two scrapes in flight, so a sick server
// is not piled on.
//
// emit receives every Sample, from the target's goroutine: calls for one
// target come one at a time in tick order, calls for different targets
// concurrently, so emit must be safe for concurrent use. It should be
// fast (append under a mutex): a slow emit delays that target's next
// scrape (its ticks become gaps) but no other target's.
//
// When ctx ends, scrapes in flight are cancelled and dropped (they say
// nothing about the server), no emit call starts, and Run returns once
// every goroutine it started has finished: promptly, never more than
// Timeout later (plus an emit call still running).
func Run(ctx context.Context, cfg Config, emit func(Sample)) error {
	if emit == nil {
		return errors.New("scrape: emit is nil")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	client, done := cfg.client()
	defer done() // after wg.Wait: no scrape is left
	start := cfg.Now()
	var wg sync.WaitGroup
	for _, t := range cfg.Targets {
		s := &scraper{target: t, cfg: &cfg, client: client, emit: emit}
		wg.Go(func() { s.loop(ctx, start) })
	}
	wg.Wait()
	return nil
}

// Check validates cfg as Run would, without scraping: the error is a
// *ConfigError naming the field.
func (cfg Config) Check() error {
	_, err := cfg.withDefaults()
	return err
}

// Once scrapes every target once, now, concurrently, and emits the samples
// (Intended is the scrape's start): the closing scrape of a run, so that
// its last window ends after its last request.
func Once(ctx context.Context, cfg Config, emit func(Sample)) error {
	if emit == nil {
		return errors.New("scrape: emit is nil")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	client, done := cfg.client()
	defer done()
	var wg sync.WaitGroup
	for _, t := range cfg.Targets {
		wg.Go(func() {
			at := cfg.Now()
			smp := fetch(ctx, client, t.URL, cfg.Timeout, cfg.MaxBody, 0, cfg.Now)
			smp.Target, smp.Intended = t.Name, at
			emit(smp)
		})
	}
	wg.Wait()
	return nil
}

// client is cfg's HTTP client, or one of the scrapes' own with the
// function that closes its idle connections once no scrape is left.
func (cfg Config) client() (*http.Client, func()) {
	if cfg.Client != nil {
		return cfg.Client, func() {}
	}
	tr := newTransport(len(cfg.Targets))
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}

// NewClient is a connection pool for scrapes alone, for targets
// endpoints, to share between a Probe and the Run after it: the
// connection the probe opened is the one the scrapes keep using, which a
// server serving one connection per thread (llama-server) never hands to
// the benchmark's load. Close its idle connections when done.
func NewClient(targets int) *http.Client {
	return &http.Client{Transport: newTransport(max(targets, 1))}
}

// newTransport is a connection pool for scrapes alone, so that they never
// take a connection from, or queue behind, the benchmark's requests.
func newTransport(targets int) *http.Transport {
	return &http.Transport{
		// No proxy from the environment: the targets are the server's
		// own ports, and a proxy would add its latency to every Sample.
		Proxy:       nil,
		DialContext: (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		// One scrape per target is in flight, so at most one connection
		// per target is ever idle.
		MaxIdleConns:        targets,
		MaxIdleConnsPerHost: targets,
		IdleConnTimeout:     90 * time.Second,
		// Asking for gzip would make the server under test spend CPU
		// compressing on every scrape; the bytes are cheap on a LAN.
		DisableCompression: true,
	}
}

// scraper is one target's loop; only its goroutine touches it.
type scraper struct {
	target Target
	cfg    *Config
	client *http.Client
	emit   func(Sample)
	hint   int // the last body's size, to size the next buffer
}

// loop scrapes on the ticks from start's until ctx ends.
func (s *scraper) loop(ctx context.Context, start int64) {
	iv := int64(s.cfg.Interval)
	due := floorDiv(start, iv) * iv
	skipped := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		// Wait for the tick against the run clock, recomputed each time,
		// so the ticks never drift however long the scrapes take.
		if d := due - s.cfg.Now(); d > 0 {
			timer.Reset(time.Duration(d))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		smp := fetch(ctx, s.client, s.target.URL, s.cfg.Timeout, s.cfg.MaxBody, s.hint, s.cfg.Now)
		if ctx.Err() != nil {
			return // the run is over: emit no more
		}
		if smp.Err == nil {
			s.hint = len(smp.Body)
		}
		smp.Target, smp.Intended, smp.Skipped = s.target.Name, due, skipped
		s.emit(smp)

		// The next tick is the first one not yet past; those passed
		// while this scrape ran are gaps.
		due += iv
		skipped = 0
		if late := s.cfg.Now() - due; late > 0 {
			m := (late + iv - 1) / iv
			due += m * iv
			skipped = int(m)
		}
	}
}

// floorDiv is a/b rounded toward −∞ (b > 0), so a clock read before the
// run's zero still maps to the tick at or before it.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// errCancelled marks a scrape cut short because the caller's ctx ended.
var errCancelled = errors.New("scrape cancelled")

// fetch makes one GET of url within timeout and returns it as a Sample
// (Target, Intended and Skipped left for the caller). hint sizes the body
// buffer.
func fetch(ctx context.Context, client *http.Client, url string, timeout time.Duration, maxBody int64, hint int, now func() int64) Sample {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var smp Sample
	fail := func(sent int64, err error, phase string) Sample {
		smp.At = now()
		smp.Latency = time.Duration(smp.At - sent)
		switch {
		case ctx.Err() != nil:
			smp.Err = errCancelled
		case errors.Is(rctx.Err(), context.DeadlineExceeded) && phase != "":
			smp.Err = fmt.Errorf("%w after %v %s", ErrTimeout, timeout, phase)
		case errors.Is(rctx.Err(), context.DeadlineExceeded):
			smp.Err = fmt.Errorf("%w after %v", ErrTimeout, timeout)
		default:
			smp.Err = oneLine(err)
		}
		smp.Body = nil
		return smp
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return fail(now(), err, "")
	}
	req.Header.Set("Accept", Accept)
	req.Header.Set("User-Agent", userAgent)
	sent := now()
	resp, err := client.Do(req)
	if err != nil {
		return fail(sent, err, "waiting for the response")
	}
	// Closing an unread body drops the connection instead of draining
	// it: right for a refused or oversize body, whose rest we don't want.
	defer resp.Body.Close()
	smp.Status = resp.StatusCode
	smp.ContentType = resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK {
		return fail(sent, &StatusError{Code: resp.StatusCode, Snippet: snippet(resp.Body)}, "")
	}
	if resp.ContentLength > maxBody {
		return fail(sent, fmt.Errorf("%w: Content-Length %d over MaxBody %d", ErrTooLarge, resp.ContentLength, maxBody), "")
	}
	// Size the buffer once: exactly, when the server says the length;
	// else for the last body and a little growth.
	size := max(hint+hint/8, 32<<10)
	if resp.ContentLength >= 0 {
		size = int(resp.ContentLength)
	}
	body, err := readBody(resp.Body, int(min(int64(size), maxBody)), maxBody)
	if err != nil {
		return fail(sent, err, fmt.Sprintf("reading the body (%d bytes read)", len(body)))
	}
	smp.At = now()
	smp.Latency = time.Duration(smp.At - sent)
	smp.Body = body
	return smp
}

// readBody reads r to its end into a fresh slice sized for size bytes
// (size ≤ limit), or fails with ErrTooLarge past limit bytes; on error it
// returns what it read.
func readBody(r io.Reader, size int, limit int64) ([]byte, error) {
	// One byte over size, so that the EOF after a body of exactly size
	// bytes needs no growth.
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
		end := min(int64(cap(buf)), limit+1)
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf[:limit], fmt.Errorf("%w: over MaxBody %d", ErrTooLarge, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// snippet is the start of a refused answer's first line, for its error.
func snippet(r io.Reader) string {
	b := make([]byte, 256)
	n, _ := io.ReadFull(r, b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	line = strings.TrimSpace(line)
	if len(line) > 80 {
		line = line[:80]
	}
	return line
}

// oneLine drops the URL from a client error (the Sample names its target)
// and keeps the message on one line; errors.Is still sees the cause.
func oneLine(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if strings.ContainsAny(err.Error(), "\r\n") {
		return &lineError{err}
	}
	return err
}

// lineError prints a multi-line error on one line.
type lineError struct{ err error }

func (e *lineError) Error() string {
	return strings.Join(strings.Fields(e.err.Error()), " ")
}

func (e *lineError) Unwrap() error { return e.err }

// Probe says whether url answers like a metrics endpoint: nil for a
// 200 OK that is not a web page or JSON (ErrNotMetrics), else the error a
// Sample would carry. It backs the rule "scrape the target's /metrics by
// default if it answers". timeout bounds the whole probe (0 means
// MaxDefaultTimeout); client nil means a one-off connection pool of its
// own.
func Probe(ctx context.Context, url string, timeout time.Duration, client *http.Client) error {
	if err := checkURL(url); err != nil {
		return &ConfigError{Field: "URL", Value: url, Err: err}
	}
	if timeout <= 0 {
		timeout = MaxDefaultTimeout
	}
	if client == nil {
		tr := newTransport(1)
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	start := time.Now()
	smp := fetch(ctx, client, url, timeout, DefaultMaxBody, 0, func() int64 { return int64(time.Since(start)) })
	switch {
	case errors.Is(smp.Err, errCancelled):
		return ctx.Err()
	case smp.Err != nil:
		return smp.Err
	}
	ct := strings.ToLower(smp.ContentType)
	if strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "text/event-stream") {
		return fmt.Errorf("%w: Content-Type %s", ErrNotMetrics, smp.ContentType)
	}
	return nil
}
