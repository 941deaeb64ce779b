package findings

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/goodput/goodput/internal/runlog"
)

// Thresholds of the publish-path rules (output-buffered, multi-token-chunks).
const (
	// burstGapNs: chunks arriving within 1 ms of the previous one belong
	// to its burst (a gateway that flushes a buffer of SSE events delivers
	// them in one read, so they arrive as separate chunks at once). A
	// decode step is several ms, so the engine's own tokens stay apart.
	burstGapNs = int64(1e6)
	// publishMinTokens: requests with fewer visible tokens say little
	// about their stream's shape; publishMinRequests such requests are
	// needed.
	publishMinTokens   = 8
	publishMinRequests = 5
	// bufferedMinBurst: bursts of this many tokens on average (or one
	// burst an answer) mean a publisher buffered the output; below it,
	// bursts of more than multiTokenMin are multi-token chunks of the
	// engine's (speculative decoding) or the server's making.
	bufferedMinBurst = 6.0
	multiTokenMin    = 1.3
	// wholeShare: this share of answers in one burst is whole-answer
	// buffering; blockShare of non-final bursts of one size is blocks.
	wholeShare = 0.8
	blockShare = 0.8
)

// publishShape folds the visible stream's shape of successful measured
// requests (Tracker.Add): bursts and their sizes, the gaps between them
// and inside them, and, where the server reported its own timing, how long
// after the server's first token the client saw its first visible one.
type publishShape struct {
	requests, single int
	bursts, tokens   int64
	// sizes counts the sizes of bursts that are not an answer's last (the
	// last holds whatever was left).
	sizes map[int]int64
	// nearZero counts per-token gaps under burstGapNs (tokens inside a
	// burst), tokenGaps all per-token gaps.
	nearZero, tokenGaps int64
	burstGaps           reservoir[float64] // ms between bursts
	serverGaps          reservoir[float64] // ms, client TTP − server's first token
	times               []int64
	counts              []int
	// rng samples the reservoirs: its own, so that adding this rule left
	// the Tracker's other samples as they were.
	rng *rand.Rand
}

// add folds one successful measured record in.
func (p *publishShape) add(r *runlog.Record) {
	if p.rng == nil {
		p.rng = rand.New(rand.NewPCG(0x9b15, 0x5eed))
	}
	p.times, p.counts = p.times[:0], p.counts[:0]
	total := 0
	for _, c := range r.Chunks {
		if !c.Visible || c.Tokens <= 0 {
			continue
		}
		total += int(c.Tokens)
		if n := len(p.times); n > 0 && c.T-p.times[n-1] < burstGapNs {
			p.nearZero += int64(c.Tokens)
			p.counts[n-1] += int(c.Tokens)
			p.times[n-1] = c.T
		} else {
			if n > 0 {
				p.burstGaps.add(float64(c.T-p.times[n-1])/1e6, p.rng)
			}
			p.nearZero += int64(c.Tokens) - 1
			p.times, p.counts = append(p.times, c.T), append(p.counts, int(c.Tokens))
		}
	}
	if total < publishMinTokens {
		return
	}
	p.requests++
	p.tokens += int64(total)
	p.tokenGaps += int64(total) - 1
	p.bursts += int64(len(p.counts))
	if len(p.counts) == 1 {
		p.single++
	}
	if p.sizes == nil {
		p.sizes = map[int]int64{}
	}
	for _, n := range p.counts[:len(p.counts)-1] {
		p.sizes[n]++
	}
	if s := r.Server; s != nil {
		// A server over HTTP reports durations, not its clock: its first
		// token is then its queue and prefill after the send, so the gap
		// holds the request's way there too (a loopback's fraction of a
		// ms; a network's more).
		base := s.ArrivalNs
		if base <= 0 {
			base = r.Sent
		}
		first := base + s.QueueNs + s.PrefillNs
		if at := p.times[0]; at >= first {
			p.serverGaps.add(float64(at-first)/1e6, p.rng)
		}
	}
}

// midOf is median's for a sample that may be empty (0 then); it sorts a
// copy, so the sample is left as it was.
func midOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return median(slices.Clone(xs))
}

// publishPattern names the bursts' pattern: whole answers, blocks of one
// size, or bursts varying in size as sentences do. Records keep no text,
// so sentence ends are inferred from the sizes varying, not seen.
func (p *publishShape) publishPattern(ev map[string]any) string {
	if float64(p.single) >= wholeShare*float64(p.requests) {
		ev["pattern"] = "whole"
		return "one burst an answer, at its end (whole-answer buffering)"
	}
	var n, mode, modeN int64
	sizes := make([]int, 0, len(p.sizes))
	for s, c := range p.sizes {
		n += c
		if c > modeN || c == modeN && int64(s) < mode {
			mode, modeN = int64(s), c
		}
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	if n > 0 && float64(modeN) >= blockShare*float64(n) {
		ev["pattern"], ev["block_tokens"] = "blocks", mode
		return fmt.Sprintf("blocks of %d tokens (block buffering)", mode)
	}
	ev["pattern"] = "sentences"
	if len(sizes) > 0 {
		ev["burst_min_tokens"], ev["burst_max_tokens"] = sizes[0], sizes[len(sizes)-1]
		return fmt.Sprintf("varying in size (%d–%d tokens) as sentences do, at sentence ends (sentence buffering)", sizes[0], sizes[len(sizes)-1])
	}
	return "varying in size as sentences do, at sentence ends (sentence buffering)"
}

// outputBuffered says a publisher between the engine and the client held
// the output back: visible tokens arrive in bursts of many (at least
// bufferedMinBurst a burst on average, or one burst an answer), so the
// per-token ITL is near zero inside bursts and the per-chunk ITL is the
// publisher's rhythm. Where the server reports its own timing, how long
// after its first token the client saw the first visible one. Multi-token
// chunks too small for that (speculative decoding) are multiTokenChunks'.
func outputBuffered(in Input) (Finding, bool) {
	t := in.Requests
	if t == nil || t.pub.requests < publishMinRequests {
		return Finding{}, false
	}
	p := &t.pub
	perBurst := float64(p.tokens) / float64(p.bursts)
	if perBurst < bufferedMinBurst && float64(p.single) < wholeShare*float64(p.requests) {
		return Finding{}, false
	}
	ev := p.evidence(perBurst)
	pattern := p.publishPattern(ev)
	msg := fmt.Sprintf("Output is buffered: tokens reach the client in bursts of ~%s: %s", num(perBurst), pattern)
	if gap, ok := ev["server_to_client_ttp_p50_ms"].(float64); ok {
		msg += fmt.Sprintf("; TTP is %s ms after the server's first token (P50)", num(gap))
	}
	msg += fmt.Sprintf(". Per-token ITL hides it (%s %% of gaps are inside a burst, near zero); per-chunk ITL P50 is %s ms. "+
		"An output filter, moderation call or gateway between the engine and the user holds tokens back: TTP and the stream's rhythm are its, not the engine's — measure with goodput proxy before and after it, or bench --compare-direct.",
		num(pctOf(float64(p.nearZero), float64(p.tokenGaps))), num(midOf(p.burstGaps.items)))
	return Finding{ID: "output-buffered", Severity: Warning, Evidence: ev, Message: msg}, true
}

// multiTokenChunks says visible tokens arrive a few at a time, too few for
// a buffering publisher: speculative decoding accepting several tokens a
// step, or a server packing a few tokens into each event. Informational:
// the stream is not held back, so TTP follows the server's first token.
func multiTokenChunks(in Input) (Finding, bool) {
	t := in.Requests
	if t == nil || t.pub.requests < publishMinRequests {
		return Finding{}, false
	}
	p := &t.pub
	perBurst := float64(p.tokens) / float64(p.bursts)
	if perBurst < multiTokenMin || perBurst >= bufferedMinBurst || float64(p.single) >= wholeShare*float64(p.requests) {
		return Finding{}, false
	}
	ev := p.evidence(perBurst)
	return Finding{ID: "multi-token-chunks", Severity: Info, Evidence: ev,
		Message: fmt.Sprintf("Tokens arrive a few at a time (~%s a chunk), not buffered: small chunks at the engine's step rhythm (per-chunk ITL P50 %s ms), as speculative decoding accepting several draft tokens a step gives, or a server sending several tokens an event. Per-token ITL (%s %% of gaps near zero) understates the wait between chunks; TPOT is the fairer speed.",
			num(perBurst), num(midOf(p.burstGaps.items)), num(pctOf(float64(p.nearZero), float64(p.tokenGaps)))),
	}, true
}

// evidence is the shape's figures: tokens a burst, per-token vs
// per-chunk ITL, and the server-to-client gap where known.
func (p *publishShape) evidence(perBurst float64) map[string]any {
	ev := map[string]any{
		"requests":                 p.requests,
		"tokens_per_burst":         round2(perBurst),
		"near_zero_token_gaps_pct": pctOf(float64(p.nearZero), float64(p.tokenGaps)),
		"per_chunk_itl_p50_ms":     round2(midOf(p.burstGaps.items)),
	}
	if p.tokenGaps > 0 {
		// The per-token view of the same stream: its median gap is 0 when
		// most tokens share a burst.
		if 2*p.nearZero >= p.tokenGaps {
			ev["per_token_itl_p50_ms"] = 0.0
		} else {
			ev["per_token_itl_p50_ms"] = ev["per_chunk_itl_p50_ms"]
		}
	}
	if len(p.serverGaps.items) > 0 {
		ev["server_to_client_ttp_p50_ms"] = round2(midOf(p.serverGaps.items))
	}
	return ev
}
