package compare

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Sessions are compared as request metrics are, with a percentile
// bootstrap, but the unit resampled is the session: a session's turns share
// its history, its cache and its server, so they are not independent
// samples (resampling turns would make intervals too narrow, as resampling
// ITL gaps would). Session-level figures (duration, session TTP) resample
// the sessions' values; turn-level ones (turn TTFT P95, the TTFT slope per
// 1K history tokens, the cached share) resample whole sessions and pool
// their turns (a cluster bootstrap); goodput and attainment resample the
// met count as a binomial, as request goodput does.

// The session metrics compared, as Delta.Metric.
const (
	// MetricSessionGoodput is sessions/s that met the session SLO.
	MetricSessionGoodput = "session_goodput"
	// MetricSessionAttainment is the share of sessions that met it.
	MetricSessionAttainment = "session_slo_attainment"
	// MetricSessionDuration is a session's first send → last end, ms.
	MetricSessionDuration = "session_duration"
	// MetricTurnTTFT is the turn TTFT over every turn of every session, ms.
	MetricTurnTTFT = "turn_ttft"
	// MetricSessionTTP is a session's slowest turn TTP, ms.
	MetricSessionTTP = "session_ttp"
	// MetricTTFTPer1KHistory is the slope of turn TTFT against the turn's
	// prompt tokens, ms per 1,000 tokens.
	MetricTTFTPer1KHistory = "ttft_per_1k_history"
	// MetricCachedShare is the share of the turns' prompt tokens served
	// from the prefix cache (higher is better).
	MetricCachedShare = "cached_share"
)

// UnitPer1KTokens is the Unit of MetricTTFTPer1KHistory.
const UnitPer1KTokens = "ms/1K tok"

// SessionComparison compares the sessions of two runs that both had them.
type SessionComparison struct {
	// SLO is the session SLO both were judged by ("" for none: goodput and
	// attainment are then not compared).
	SLO string
	// SessionsA, SessionsB count each run's sessions; MetA, MetB those
	// that met the SLO.
	SessionsA, SessionsB, MetA, MetB int
	// Deltas are, in order: session goodput and attainment (with an SLO),
	// session duration P50 and P95, turn TTFT P95, session TTP P95, TTFT
	// per 1K history tokens and the cached share. A figure one run lacks
	// (no TTP at all) is left out.
	Deltas []Delta
}

// Delta returns the comparison of a session metric at stat ("p95", or ""
// for a whole-run figure).
func (s *SessionComparison) Delta(metric, stat string) (Delta, bool) {
	for _, d := range s.Deltas {
		if d.Metric == metric && d.Stat == stat {
			return d, true
		}
	}
	return Delta{}, false
}

// sessionUnit is one session, as the bootstrap resamples it.
type sessionUnit struct {
	// ttfts and prompts are its turns' TTFTs (ms) and prompt tokens, for
	// the turns that have a TTFT.
	ttfts, prompts []float64
	// prompt and cached sum its turns' first requests' tokens.
	prompt, cached float64
}

// sessionSide is one run's sessions.
type sessionSide struct {
	sum   stats.SessionSummary
	units []sessionUnit
	// durations and ttps are the sessions' durations and slowest turn
	// TTPs (sessions with one), ms, sorted.
	durations, ttps []float64
}

// sessionSideOf summarises the sessions of recs under slo; nil when there
// are none.
func sessionSideOf(recs []runlog.Record, slo stats.SessionSLO) *sessionSide {
	sum := stats.SummarizeSessions(recs, []float64{}, slo, 0)
	if sum.Sessions == 0 {
		return nil
	}
	s := &sessionSide{sum: sum}
	turns := turnPoints(recs)
	for _, p := range sum.PerSession {
		u := turns[p.ID]
		u.prompt, u.cached = float64(p.PromptTokens), float64(p.CachedTokens)
		s.units = append(s.units, u)
		s.durations = append(s.durations, p.DurationMs)
		if len(p.TurnTTPs) > 0 {
			s.ttps = append(s.ttps, p.MaxTurnTTPMs)
		}
	}
	slices.Sort(s.durations)
	slices.Sort(s.ttps)
	return s
}

// turnPoints returns each session's (prompt tokens, turn TTFT) pairs, the
// turn's first request (lowest tool round, then earliest send) standing
// for it, as stats.SummarizeSessions takes it.
func turnPoints(recs []runlog.Record) map[string]sessionUnit {
	type key struct {
		id   string
		turn int
	}
	first := map[key]*runlog.Record{}
	var keys []key
	for i := range recs {
		r := &recs[i]
		if r.SessionID == "" || r.Warmup {
			continue
		}
		k := key{r.SessionID, r.Turn}
		f, ok := first[k]
		if !ok {
			keys = append(keys, k)
		}
		if !ok || cmp.Or(cmp.Compare(r.ToolRound, f.ToolRound), cmp.Compare(r.Sent, f.Sent)) < 0 {
			first[k] = r
		}
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.turn, b.turn)) })
	out := map[string]sessionUnit{}
	for _, k := range keys {
		r := first[k]
		d, ok := r.TTFT()
		if !ok {
			continue
		}
		u := out[k.id]
		u.ttfts = append(u.ttfts, float64(d)/1e6)
		u.prompts = append(u.prompts, float64(r.PromptTokens))
		out[k.id] = u
	}
	return out
}

// sessionSLOFor picks the session SLO: the options', else the one both
// runs stored (when they agree); a note says why there is none.
func sessionSLOFor(a, b Run, o Options) (stats.SessionSLO, string) {
	if !o.SessionSLO.IsZero() {
		return o.SessionSLO, ""
	}
	stored := func(m *runlog.Meta) string {
		if m == nil || m.Analysis == nil {
			return ""
		}
		return m.Analysis.SessionSLO
	}
	sa, sb := stored(a.Meta), stored(b.Meta)
	switch {
	case sa == "" && sb == "":
		return stats.SessionSLO{}, "no session SLO given or stored: session goodput and attainment not compared"
	case sa != sb:
		return stats.SessionSLO{}, fmt.Sprintf("session goodput not compared: the runs stored different session SLOs (%q vs %q); give one to judge both by it", sa, sb)
	}
	slo, err := stats.ParseSessionSLO(sa)
	if err != nil {
		return stats.SessionSLO{}, fmt.Sprintf("session goodput not compared: the stored session SLO %q does not parse: %v", sa, err)
	}
	return slo, ""
}

// compareSessions compares a's and b's sessions when both have them; with
// sessions on one side only, or a side without records, it returns nil and
// a note saying why (none when neither has sessions).
func compareSessions(a, b Run, o Options) (*SessionComparison, []string) {
	name := func(r Run, def string) string {
		if r.Name != "" {
			return r.Name
		}
		return def
	}
	slo, sloNote := sessionSLOFor(a, b, o)
	var sa, sb *sessionSide
	if a.Records != nil {
		sa = sessionSideOf(a.Records, slo)
	}
	if b.Records != nil {
		sb = sessionSideOf(b.Records, slo)
	}
	switch {
	case sa == nil && sb == nil:
		return nil, nil
	case sa != nil && b.Records == nil:
		return nil, []string{fmt.Sprintf("sessions not compared: %s is a summary without its sessions' records", name(b, "B"))}
	case sb != nil && a.Records == nil:
		return nil, []string{fmt.Sprintf("sessions not compared: %s is a summary without its sessions' records", name(a, "A"))}
	case sb == nil:
		return nil, []string{fmt.Sprintf("only %s has sessions (%d): session metrics not compared", name(a, "A"), sa.sum.Sessions)}
	case sa == nil:
		return nil, []string{fmt.Sprintf("only %s has sessions (%d): session metrics not compared", name(b, "B"), sb.sum.Sessions)}
	}
	c := &SessionComparison{SessionsA: sa.sum.Sessions, SessionsB: sb.sum.Sessions, MetA: sa.sum.Met, MetB: sb.sum.Met}
	var notes []string
	if slo.IsZero() {
		notes = append(notes, sloNote)
	} else {
		c.SLO = slo.String()
		att, gp := goodDeltas(MetricSessionAttainment, MetricSessionGoodput, "sessions/s",
			sa.sum.Met, sa.sum.Sessions, sa.sum.Span, sb.sum.Met, sb.sum.Sessions, sb.sum.Span, o, seedFor(o.Seed, MetricSessionGoodput, ""))
		c.Deltas = append(c.Deltas, gp, att)
	}
	for _, p := range []float64{50, 95} {
		c.Deltas = append(c.Deltas, percentileDelta(MetricSessionDuration, p, sa.durations, sb.durations, o))
	}
	c.Deltas = append(c.Deltas, clusterDelta(MetricTurnTTFT, "p95", "ms", true, sa.units, sb.units, turnTTFTP95, o))
	if len(sa.ttps) > 0 && len(sb.ttps) > 0 {
		c.Deltas = append(c.Deltas, percentileDelta(MetricSessionTTP, 95, sa.ttps, sb.ttps, o))
	}
	c.Deltas = append(c.Deltas,
		clusterDelta(MetricTTFTPer1KHistory, "", UnitPer1KTokens, true, sa.units, sb.units, ttftSlope, o),
		clusterDelta(MetricCachedShare, "", UnitShare, false, sa.units, sb.units, cachedShare, o))
	return c, notes
}

// percentileDelta compares the p-th percentile of two sorted samples of
// independent values (ms), lower better, with the bootstrap interval.
func percentileDelta(metric string, p float64, xa, xb []float64, o Options) Delta {
	st := statName(p)
	d := plainDelta(metric, st, "ms", percentile(xa, p), percentile(xb, p), true)
	d.NA, d.NB = len(xa), len(xb)
	if len(xa) >= 2 && len(xb) >= 2 {
		rng := seedFor(o.Seed, metric, st)
		diffs := make([]float64, o.Resamples)
		for k := range diffs {
			diffs[k] = resamplePercentile(rng, xb, p) - resamplePercentile(rng, xa, p)
		}
		d.HasCI = true
		d.Lo, d.Hi = interval(diffs, o.Confidence)
	}
	judge(&d)
	return d
}

// clusterStat is a statistic over a set of sessions; ok is false when it
// is undefined for them (no turn with a TTFT). buf is scratch space.
type clusterStat func(us []*sessionUnit, buf []float64) (v float64, ok bool, scratch []float64)

// clusterDelta compares statistic f of the runs' sessions, with a cluster
// bootstrap interval: each resample draws as many sessions as the run had,
// with replacement, and computes f over the turns of those drawn. Resamples
// where f is undefined are dropped; with fewer than half left, or fewer
// than two sessions a side, there is no interval.
func clusterDelta(metric, stat, unit string, lowerBetter bool, ua, ub []sessionUnit, f clusterStat, o Options) Delta {
	ptrs := func(us []sessionUnit) []*sessionUnit {
		out := make([]*sessionUnit, len(us))
		for i := range us {
			out[i] = &us[i]
		}
		return out
	}
	pa, pb := ptrs(ua), ptrs(ub)
	va, oka, buf := f(pa, nil)
	vb, okb, buf := f(pb, buf)
	if !oka || !okb {
		d := plainDelta(metric, stat, unit, va, vb, lowerBetter)
		if !oka {
			d.A = math.NaN()
		}
		if !okb {
			d.B = math.NaN()
		}
		d.Diff = d.B - d.A
		d.NA, d.NB = len(ua), len(ub)
		return d
	}
	d := plainDelta(metric, stat, unit, va, vb, lowerBetter)
	d.NA, d.NB = len(ua), len(ub)
	if len(ua) >= 2 && len(ub) >= 2 {
		rng := seedFor(o.Seed, metric, stat)
		draw := func(from, into []*sessionUnit) []*sessionUnit {
			into = into[:0]
			for range from {
				into = append(into, from[rng.IntN(len(from))])
			}
			return into
		}
		diffs := make([]float64, 0, o.Resamples)
		var ra, rb []*sessionUnit
		for range o.Resamples {
			rb = draw(pb, rb)
			ra = draw(pa, ra)
			var xb, xa float64
			var okb, oka bool
			xb, okb, buf = f(rb, buf)
			xa, oka, buf = f(ra, buf)
			if oka && okb {
				diffs = append(diffs, xb-xa)
			}
		}
		if 2*len(diffs) >= o.Resamples {
			d.HasCI = true
			d.Lo, d.Hi = interval(diffs, o.Confidence)
		}
	}
	judge(&d)
	return d
}

// turnTTFTP95 is the P95 of the sessions' turn TTFTs pooled.
func turnTTFTP95(us []*sessionUnit, buf []float64) (float64, bool, []float64) {
	buf = buf[:0]
	for _, u := range us {
		buf = append(buf, u.ttfts...)
	}
	if len(buf) == 0 {
		return 0, false, buf
	}
	slices.Sort(buf)
	return percentile(buf, 95), true, buf
}

// ttftSlope is the least-squares slope of turn TTFT on prompt tokens over
// the sessions' turns, ms per 1,000 tokens (as stats' TTFTPer1KHistory);
// undefined when the prompt lengths do not vary.
func ttftSlope(us []*sessionUnit, buf []float64) (float64, bool, []float64) {
	var n, mx, my float64
	for _, u := range us {
		for i := range u.ttfts {
			n, mx, my = n+1, mx+u.prompts[i], my+u.ttfts[i]
		}
	}
	if n < 2 {
		return 0, false, buf
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for _, u := range us {
		for i := range u.ttfts {
			dx := u.prompts[i] - mx
			sxy += dx * (u.ttfts[i] - my)
			sxx += dx * dx
		}
	}
	if sxx == 0 {
		return 0, false, buf
	}
	return 1000 * sxy / sxx, true, buf
}

// cachedShare is the sessions' cached prompt tokens over their prompt
// tokens (the turns' first requests); undefined without prompt tokens.
func cachedShare(us []*sessionUnit, buf []float64) (float64, bool, []float64) {
	var p, c float64
	for _, u := range us {
		p, c = p+u.prompt, c+u.cached
	}
	if p == 0 {
		return 0, false, buf
	}
	return c / p, true, buf
}

// goodDeltas compares a share of units that met an SLO (attainment, named
// attName) and their rate over each run's duration in seconds (goodput,
// rateName in rateUnit), with bootstrap intervals: resampling the units
// makes the met count binomial with the observed share, the duration
// staying the run's. A goodput change the attainment does not carry is a
// throughput change, which one figure per run cannot call significant.
func goodDeltas(attName, rateName, rateUnit string, goodA, nA int, durA float64, goodB, nB int, durB float64, o Options, rng *rand.Rand) (att, gp Delta) {
	pa, pb := frac(goodA, nA), frac(goodB, nB)
	att = plainDelta(attName, "", UnitShare, pa, pb, false)
	gp = plainDelta(rateName, "", rateUnit, rate(goodA, durA), rate(goodB, durB), false)
	if nA > 0 && nB > 0 {
		as := make([]float64, o.Resamples)
		gs := make([]float64, o.Resamples)
		for k := range as {
			ka, kb := binomial(rng, nA, pa), binomial(rng, nB, pb)
			as[k] = frac(kb, nB) - frac(ka, nA)
			gs[k] = rate(kb, durB) - rate(ka, durA)
		}
		att.HasCI, gp.HasCI = true, durA > 0 && durB > 0
		att.Lo, att.Hi = interval(as, o.Confidence)
		gp.Lo, gp.Hi = interval(gs, o.Confidence)
	}
	att.NA, att.NB = nA, nB
	gp.NA, gp.NB = nA, nB
	judge(&att)
	judge(&gp)
	if att.Verdict == NoSignificant && (gp.Verdict == Better || gp.Verdict == Worse) {
		gp.Verdict = NoSignificant
	}
	return att, gp
}
