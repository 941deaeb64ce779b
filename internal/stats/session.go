package stats

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"gonum.org/v1/gonum/stat/distuv"
)

// A session (a conversation, an agent loop) is felt as a whole: each turn
// resends the history, so TTFT grows with the turn; a tool round trip
// pushes the answer's first visible token past the first token; and the
// session's duration is model time plus tool time plus the user's think
// time. These summaries group the records of a run by Record.SessionID.
//
// Definitions, on the records of one session (measured ones only):
//   - a turn is the requests with one Turn number: the user's message
//     (ToolRound 0) and the follow-ups that send tool results back;
//   - turn TTFT is the first request's TTFT; turn TTP is from that
//     request's send to the first visible token of the turn's last request
//     (the answer, after every tool round);
//   - model time is the sum of the requests' send → end; tool time the sum,
//     within a turn, of each request's end → the next tool round's send;
//     think time the sum of each turn's intended start − the previous
//     turn's end (the client waits it by design);
//   - duration is the first send → the last end;
//   - a session failed if any of its requests failed.

// SessionSLO is what a session must meet: a zero field sets no constraint.
type SessionSLO struct {
	// TTP bounds every turn's TTP (each user message gets its first
	// visible answer within it).
	TTP time.Duration
	// TurnTTFTP95 bounds the P95 of the session's turn TTFTs.
	TurnTTFTP95 time.Duration
	// Duration bounds the session's duration.
	Duration time.Duration
}

// IsZero reports whether s has no constraint.
func (s SessionSLO) IsZero() bool { return s == SessionSLO{} }

// sessionSLONames are the names ParseSessionSLO reads, in String's order.
var sessionSLONames = [...]string{"ttp", "turn_ttft_p95", "duration"}

func (s *SessionSLO) fields() [3]*time.Duration {
	return [3]*time.Duration{&s.TTP, &s.TurnTTFTP95, &s.Duration}
}

// String renders s as ParseSessionSLO reads it, limits in ms.
func (s SessionSLO) String() string {
	var parts []string
	for i, d := range s.fields() {
		if *d > 0 {
			parts = append(parts, sessionSLONames[i]+":"+strconv.FormatFloat(float64(*d)/float64(time.Millisecond), 'f', -1, 64))
		}
	}
	return strings.Join(parts, " ")
}

// ParseSessionSLO reads "name:ms" pairs separated by spaces or commas:
// ttp (every turn's TTP), turn_ttft_p95 and duration, e.g. "ttp:2000
// turn_ttft_p95:800 duration:60000". Errors name the pair.
func ParseSessionSLO(s string) (SessionSLO, error) {
	var slo SessionSLO
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		name, val, ok := strings.Cut(f, ":")
		i := slices.Index(sessionSLONames[:], strings.ToLower(name))
		if !ok || i < 0 {
			return SessionSLO{}, fmt.Errorf("session slo %q: want name:milliseconds with name ttp, turn_ttft_p95 or duration", f)
		}
		ms, err := strconv.ParseFloat(val, 64)
		if err != nil || !(ms > 0) || math.IsInf(ms, 0) || ms > 1e12 {
			return SessionSLO{}, fmt.Errorf("session slo %q: want a positive number of milliseconds", f)
		}
		*slo.fields()[i] = time.Duration(ms * float64(time.Millisecond))
	}
	return slo, nil
}

// SessionStats is one session measured.
type SessionStats struct {
	// ID is the session id; Turns its turns; ToolRounds the most tool
	// rounds of any turn; Failed says a request of it failed.
	ID                string
	Turns, ToolRounds int
	Failed            bool
	// Start and End are its first send and last end, ns.
	Start, End int64
	// TurnTTFTs and TurnTTPs are its turns' TTFT and TTP, ms (a turn
	// without a visible answer has no TTP).
	TurnTTFTs, TurnTTPs []float64
	// Model, Tool and Think split its time (see the definitions above).
	Model, Tool, Think time.Duration
	// PromptTokens and CachedTokens sum its turns' first requests.
	PromptTokens, CachedTokens int
	// DurationMs, MaxTurnTTPMs and TurnTTFTP95Ms are what the session SLO
	// judges; MetSLO says it met every constraint (false without an SLO).
	DurationMs, MaxTurnTTPMs, TurnTTFTP95Ms float64
	MetSLO                                  bool
}

// TurnSummary is one turn index across sessions.
type TurnSummary struct {
	// Turn is the turn number (from 1); N the sessions that reached it.
	Turn, N int
	// TTFT and TTP are the turn TTFT and TTP over those sessions, E2E the
	// turn's first send to its last request's end (tool rounds included,
	// turns whose last request failed left out); Prompt the first request's
	// prompt tokens (the history grows with the turn).
	TTFT, TTP, E2E MetricSummary
	Prompt         MetricSummary
	// CachedShare is the share of the prompt tokens of the turn's first
	// requests served from the prefix cache.
	CachedShare float64
}

// SessionSummary is a run's sessions.
type SessionSummary struct {
	// Sessions, Completed and Failed count sessions.
	Sessions, Completed, Failed int
	// Turns summarises each turn index, in order.
	Turns []TurnSummary
	// Duration, TurnTTFT, TurnTTP and TurnsPerSession are over the
	// sessions (the turn metrics over every turn of every session).
	Duration, TurnTTFT, TurnTTP, TurnsPerSession MetricSummary
	// ModelShare, ToolShare and ThinkShare split the sessions' time.
	ModelShare, ToolShare, ThinkShare float64
	// TTFTPer1KHistory is the slope of turn TTFT against the turn's prompt
	// tokens, ms per 1,000 tokens (least squares over every turn); 0 with
	// fewer than two distinct prompt lengths. TTFTPer1KHistoryCI is its
	// interval: Student-t on the slope's standard error, the turns'
	// residuals taken as independent.
	TTFTPer1KHistory   float64
	TTFTPer1KHistoryCI Interval
	// SLO is the session SLO judged: Met sessions, Attainment (of all
	// sessions) and Goodput, sessions/s that met it over the span from the
	// first send to the last end of any session.
	SLO                       SessionSLO
	Met                       int
	Attainment, Goodput, Span float64
	// AttainmentCI is Attainment's Wilson interval over the sessions, and
	// GoodputCI Goodput's: the same interval times sessions over the span
	// (the sessions a run sends are its setting; whether each meets the
	// SLO is the chance).
	AttainmentCI, GoodputCI Interval
	// Confidence is the level of the intervals (0: none asked for). The
	// distributions' intervals are order-statistic and batch-means ones,
	// as a level's (Options.Confidence), over the sessions in order of
	// start.
	Confidence float64
	// HistoryCut counts the turns sent with their earliest turns left out
	// of the history (a context cap).
	HistoryCut int
	// PerSession holds each session, in order of start.
	PerSession []SessionStats
}

// SummarizeSessions groups recs by session and summarises them (records
// outside a session and warm-ups are ignored), percentiles ps (nil: the
// defaults), judged by slo, with intervals at level (0: none).
func SummarizeSessions(recs []runlog.Record, ps []float64, slo SessionSLO, level float64) SessionSummary {
	if ps == nil {
		ps = DefaultPercentiles
	}
	if !(level > 0 && level < 1) {
		level = 0
	}
	out := SessionSummary{SLO: slo, Confidence: level}
	bySession := map[string][]*runlog.Record{}
	var ids []string
	for i := range recs {
		r := &recs[i]
		if r.SessionID == "" || r.Warmup || r.Retried {
			continue // a retried attempt is not the turn's outcome: its retry is
		}
		if r.HistoryDropped > 0 && r.ToolRound == 0 {
			out.HistoryCut++
		}
		if _, ok := bySession[r.SessionID]; !ok {
			ids = append(ids, r.SessionID)
		}
		bySession[r.SessionID] = append(bySession[r.SessionID], r)
	}
	type turnAcc struct {
		ttft, ttp, e2e, prompt []float64
		tokens, cached         int
	}
	turns := map[int]*turnAcc{}
	var durations, turnTTFTs, turnTTPs, turnCounts []float64
	var model, tool, think time.Duration
	var xs, ys []float64 // prompt tokens, turn TTFT ms: the history slope
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	// In order of start, so that the intervals' batches follow time.
	type measured struct {
		s  SessionStats
		ts []turn
	}
	all := make([]measured, len(ids))
	for i, id := range ids {
		all[i].ts = turnsOf(bySession[id])
		all[i].s = sessionStats(id, bySession[id], all[i].ts)
	}
	slices.SortStableFunc(all, func(a, b measured) int { return cmp.Compare(a.s.Start, b.s.Start) })
	for _, m := range all {
		s, ts := m.s, m.ts
		if slo.TTP > 0 || slo.TurnTTFTP95 > 0 || slo.Duration > 0 {
			s.MetSLO = !s.Failed &&
				(slo.TTP == 0 || (len(s.TurnTTPs) == s.Turns && s.MaxTurnTTPMs <= toMs(slo.TTP))) &&
				(slo.TurnTTFTP95 == 0 || (len(s.TurnTTFTs) > 0 && s.TurnTTFTP95Ms <= toMs(slo.TurnTTFTP95))) &&
				(slo.Duration == 0 || s.DurationMs <= toMs(slo.Duration))
		}
		out.PerSession = append(out.PerSession, s)
		first, last = min(first, s.Start), max(last, s.End)
		out.Sessions++
		if s.Failed {
			out.Failed++
		} else {
			out.Completed++
		}
		if s.MetSLO {
			out.Met++
		}
		durations = append(durations, s.DurationMs)
		turnTTFTs = append(turnTTFTs, s.TurnTTFTs...)
		turnTTPs = append(turnTTPs, s.TurnTTPs...)
		turnCounts = append(turnCounts, float64(s.Turns))
		model, tool, think = model+s.Model, tool+s.Tool, think+s.Think
		for _, t := range ts {
			a := turns[t.turn]
			if a == nil {
				a = &turnAcc{}
				turns[t.turn] = a
			}
			if t.ttftOK {
				a.ttft = append(a.ttft, t.ttft)
				xs, ys = append(xs, float64(t.prompt)), append(ys, t.ttft)
			}
			if t.ttpOK {
				a.ttp = append(a.ttp, t.ttp)
			}
			if t.last.OK() {
				a.e2e = append(a.e2e, float64(t.end-t.start)/1e6)
			}
			a.prompt = append(a.prompt, float64(t.prompt))
			a.tokens += t.prompt
			a.cached += t.cached
		}
	}
	for _, k := range slices.Sorted(maps.Keys(turns)) {
		a := turns[k]
		ts := TurnSummary{Turn: k, N: len(a.prompt), TTFT: valuesSummaryCI(MetricTTFT, ps, a.ttft, level),
			TTP: valuesSummaryCI(MetricTTP, ps, a.ttp, level), E2E: valuesSummaryCI(MetricE2E, ps, a.e2e, level),
			Prompt: valuesSummary("prompt_tokens", ps, a.prompt)}
		if a.tokens > 0 {
			ts.CachedShare = float64(a.cached) / float64(a.tokens)
		}
		out.Turns = append(out.Turns, ts)
	}
	out.Duration = valuesSummaryCI("session_duration", ps, durations, level)
	out.TurnTTFT = valuesSummaryCI("turn_ttft", ps, turnTTFTs, level)
	out.TurnTTP = valuesSummaryCI("turn_ttp", ps, turnTTPs, level)
	out.TurnsPerSession = valuesSummaryCI("turns", ps, turnCounts, level)
	if all := model + tool + think; all > 0 {
		out.ModelShare, out.ToolShare, out.ThinkShare = float64(model)/float64(all), float64(tool)/float64(all), float64(think)/float64(all)
	}
	_, perToken := LinearFit(xs, ys)
	out.TTFTPer1KHistory = 1000 * perToken
	if iv, ok := SlopeInterval(xs, ys, level); ok {
		out.TTFTPer1KHistoryCI = Interval{Lo: 1000 * iv.Lo, Hi: 1000 * iv.Hi, Level: level}
	}
	if out.Sessions > 0 {
		out.Attainment = float64(out.Met) / float64(out.Sessions)
		if level > 0 && !slo.IsZero() {
			out.AttainmentCI, _ = WilsonInterval(out.Attainment, float64(out.Sessions), level)
		}
		if span := float64(last-first) / 1e9; span > 0 {
			out.Span = span
			out.Goodput = float64(out.Met) / span
			if iv := out.AttainmentCI; iv.OK() {
				per := float64(out.Sessions) / span
				out.GoodputCI = Interval{Lo: iv.Lo * per, Hi: iv.Hi * per, Level: level}
			}
		}
	}
	return out
}

// turn is one turn of one session.
type turn struct {
	turn                 int
	ttft, ttp            float64 // ms
	ttftOK, ttpOK        bool
	prompt, cached       int
	last                 *runlog.Record
	intended, start, end int64
	// tool is the turn's tool time: each round's end to the next round's
	// send.
	tool time.Duration
}

// turnsOf splits a session's records into turns, in turn order (requests
// within a turn in tool-round order).
func turnsOf(rs []*runlog.Record) []turn {
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b *runlog.Record) int {
		return cmp.Or(cmp.Compare(a.Turn, b.Turn), cmp.Compare(a.ToolRound, b.ToolRound), cmp.Compare(a.Sent, b.Sent))
	})
	var out []turn
	for _, r := range rs {
		if len(out) == 0 || out[len(out)-1].turn != r.Turn {
			t := turn{turn: r.Turn, intended: r.Intended, start: r.Sent, prompt: r.PromptTokens, cached: r.CachedTokens}
			if d, ok := r.TTFT(); ok {
				t.ttft, t.ttftOK = toMs(d), true
			}
			out = append(out, t)
		}
		t := &out[len(out)-1]
		if t.last != nil && r.ToolRound > t.last.ToolRound {
			t.tool += time.Duration(max(r.Sent-t.last.End, 0))
		}
		t.last, t.end = r, max(t.end, r.End)
	}
	for i := range out {
		t := &out[i]
		if d, ok := t.last.TTP(); ok && t.last.OK() {
			t.ttp, t.ttpOK = float64(t.last.Sent+int64(d)-t.start)/1e6, true
		}
	}
	return out
}

// sessionStats measures one session of records rs, split into turns ts.
func sessionStats(id string, rs []*runlog.Record, ts []turn) SessionStats {
	s := SessionStats{ID: id, Start: math.MaxInt64, End: math.MinInt64}
	s.Turns = len(ts)
	for _, r := range rs {
		s.Failed = s.Failed || !r.OK()
		s.Start, s.End = min(s.Start, r.Sent), max(s.End, r.End)
		s.Model += time.Duration(r.End - r.Sent)
		if r.ToolRound > s.ToolRounds {
			s.ToolRounds = r.ToolRound
		}
	}
	for i, t := range ts {
		if t.ttftOK {
			s.TurnTTFTs = append(s.TurnTTFTs, t.ttft)
		}
		if t.ttpOK {
			s.TurnTTPs = append(s.TurnTTPs, t.ttp)
			s.MaxTurnTTPMs = max(s.MaxTurnTTPMs, t.ttp)
		}
		s.PromptTokens += t.prompt
		s.CachedTokens += t.cached
		s.Tool += t.tool
		if i > 0 {
			s.Think += time.Duration(max(t.intended-ts[i-1].end, 0))
		}
	}
	s.DurationMs = float64(s.End-s.Start) / 1e6
	if len(s.TurnTTFTs) > 0 {
		v := slices.Sorted(slices.Values(s.TurnTTFTs))
		s.TurnTTFTP95Ms = Percentile(v, 95)
	}
	return s
}

// valuesSummary is the MetricSummary of vals (exact).
func valuesSummary(name string, ps []float64, vals []float64) MetricSummary {
	v := slices.Sorted(slices.Values(vals))
	var mom moments
	for _, x := range v {
		mom.add(x)
	}
	return fillSummary(MetricSummary{Name: name, N: len(v)}, ps, func(k int) float64 { return v[k] }, mom)
}

// valuesSummaryCI is valuesSummary with intervals at level (none for 0):
// vals in the order they happened, for the batches.
func valuesSummaryCI(name string, ps []float64, vals []float64, level float64) MetricSummary {
	m := valuesSummary(name, ps, vals)
	if level <= 0 || len(vals) == 0 {
		return m
	}
	bt := new(batchMeans)
	for _, x := range vals {
		bt.add(x)
	}
	v := slices.Sorted(slices.Values(vals))
	return intervals(m, func(k int) float64 { return v[k] }, bt, level)
}

// SlopeInterval is the interval at level of the least-squares slope of ys
// on xs (LinearFit's b): b ± t(n−2)·SE, SE² = Σ residual² / (n−2) / Σ(x −
// x̄)². ok is false with fewer than three points, xs that do not vary, or
// level not in (0, 1).
func SlopeInterval(xs, ys []float64, level float64) (Interval, bool) {
	n := len(xs)
	if n < 3 || len(ys) != n || !(level > 0 && level < 1) {
		return Interval{}, false
	}
	a, b := LinearFit(xs, ys)
	var mx float64
	for _, x := range xs {
		mx += x
	}
	mx /= float64(n)
	var sxx, sse float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		r := ys[i] - a - b*xs[i]
		sse += r * r
	}
	if !(sxx > 0) {
		return Interval{}, false
	}
	se := math.Sqrt(sse / float64(n-2) / sxx)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}.Quantile(1 - (1-level)/2)
	return Interval{Lo: b - t*se, Hi: b + t*se, Level: level}, true
}

// LinearFit is the least-squares line y = a + b·x through xs, ys (b = 0
// and a the mean when xs do not vary; both 0 with no points).
func LinearFit(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx > 0 {
		b = sxy / sxx
	}
	return my - b*mx, b
}

func toMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// SummarizeValues summarises plain values (ms, tokens) as a metric named
// name, at percentiles ps (nil: the defaults).
func SummarizeValues(name string, ps []float64, vals []float64) MetricSummary {
	if ps == nil {
		ps = DefaultPercentiles
	}
	return valuesSummary(name, ps, vals)
}
