package stats

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Preset is a named set of SLO constraints for one kind of product, with
// the public sources its numbers come from. Request constraints judge each
// request (goodput); Session constraints judge each session (session
// goodput). Presets are values: Presets and LookupPreset return copies, so
// they are safe for concurrent use and a caller may change what it got.
//
// Limits are per request, not percentiles: a request meets the preset when
// each of its values is within the limit. Sources that bind a percentile
// (MLPerf's P99) or an attainment (DistServe's 90%) are matched by reading
// the run's SLO attainment against that share.
type Preset struct {
	// Name is what --slo-preset takes, e.g. "chat".
	Name string
	// Product says which product the preset is for.
	Product string
	// Summary is the preset in one line.
	Summary string
	// Request is the per-request SLO (the --goodput constraints); zero
	// means every successful request counts toward goodput.
	Request SLO
	// Session is the per-session SLO (the --session-goodput constraints);
	// zero means no session constraint.
	Session SessionSLO
	// Sources are the public sources the numbers come from, each with the
	// claim taken from it.
	Sources []PresetSource
	// Defaults lists the choices no source fixes, each with its reason:
	// goodput's own defaults, not citations.
	Defaults []string
}

// PresetSource is one public source of a preset's numbers.
type PresetSource struct {
	// Claim is what the preset takes from the source, with the arithmetic
	// when a number is derived.
	Claim string
	// Title names the source (authors, title, venue, year).
	Title string
	// URL is where to read it (https).
	URL string
}

// ErrUnknownPreset is returned (wrapped) by LookupPreset for a name that
// names no preset.
var ErrUnknownPreset = errors.New("unknown SLO preset")

// Merge returns p's constraints overridden field by field by explicit ones:
// each non-zero field of req or sess wins over p's, each zero field keeps
// p's. So "--slo-preset chat --goodput ttft:300" is chat with TTFT 300 ms.
func (p Preset) Merge(req SLO, sess SessionSLO) (SLO, SessionSLO) {
	r, s := p.Request, p.Session
	override := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	override(&r.TTFT, req.TTFT)
	override(&r.TPOT, req.TPOT)
	override(&r.E2E, req.E2E)
	override(&r.TTP, req.TTP)
	override(&s.TTP, sess.TTP)
	override(&s.TurnTTFTP95, sess.TurnTTFTP95)
	override(&s.Duration, sess.Duration)
	return r, s
}

// Presets returns every preset, in a stable order (chat, voice,
// code-completion, batch, agent).
func Presets() []Preset {
	out := make([]Preset, len(presets))
	for i, p := range presets {
		out[i] = p.clone()
	}
	return out
}

// PresetNames returns the presets' names in the order of Presets.
func PresetNames() []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	return names
}

// LookupPreset returns the preset called name, ignoring case and
// surrounding space. For any other name the error wraps ErrUnknownPreset
// and lists the known names.
func LookupPreset(name string) (Preset, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range presets {
		if p.Name == n {
			return p.clone(), nil
		}
	}
	return Preset{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownPreset, name, strings.Join(PresetNames(), ", "))
}

func (p Preset) clone() Preset {
	p.Sources = append([]PresetSource(nil), p.Sources...)
	p.Defaults = append([]string(nil), p.Defaults...)
	return p
}

// The sources, shared by several presets. Each was read, not recalled; see
// docs/slo.md for the table and the arithmetic.
var (
	srcMLPerfConf = PresetSource{
		Title: "MLCommons, MLPerf Inference LoadGen configuration mlperf.conf (latency bounds in ms; the Server scenarios' at the 99th percentile)",
		URL:   "https://github.com/mlcommons/inference/blob/master/loadgen/mlperf.conf",
	}
	srcDistServeArtifact = PresetSource{
		Title: "Zhong et al., DistServe: Disaggregating Prefill and Decoding for Goodput-optimized LLM Serving (OSDI 2024, arXiv:2401.09670), artifact script evaluation/ae-scripts/e2e/_plot.py",
		URL:   "https://github.com/LLMServe/DistServe/blob/main/evaluation/ae-scripts/e2e/_plot.py",
	}
	srcDistServeBlog = PresetSource{
		Title: "Hao AI Lab (UC San Diego), blog post introducing DistServe and goodput (2024)",
		URL:   "https://hao-ai-lab.github.io/summary/distserve",
	}
	srcBrysbaert = PresetSource{
		Title: "Brysbaert, How many words do we read per minute? A review and meta-analysis of reading rate, Journal of Memory and Language 109 (2019)",
		URL:   "https://doi.org/10.1016/j.jml.2019.104047",
	}
	srcGeminiTokens = PresetSource{
		Claim: "100 tokens are about 60-80 English words, i.e. 1.25-1.67 tokens a word; goodput converts words to tokens at 1.3",
		Title: "Google, Gemini API docs: Understand and count tokens",
		URL:   "https://ai.google.dev/gemini-api/docs/tokens",
	}
	srcLevinson = PresetSource{
		Title: "Levinson & Torreira, Timing in turn-taking and its implications for processing models of language, Frontiers in Psychology 6:731 (2015)",
		URL:   "https://doi.org/10.3389/fpsyg.2015.00731",
	}
	srcStivers = PresetSource{
		Title: "Stivers et al., Universals and cultural variation in turn-taking in conversation, PNAS 106(26) (2009)",
		URL:   "https://doi.org/10.1073/pnas.0903616106",
	}
	srcCopilotTalk = PresetSource{
		Title: "Cheney, How GitHub Copilot Serves 400 Million Completion Requests a Day, InfoQ presentation (2025)",
		URL:   "https://www.infoq.com/presentations/github-copilot/",
	}
)

// ReadingSpeedMs is the time an adult takes to read one token silently,
// ms: 238 words/min, the mean for English non-fiction in Brysbaert's
// meta-analysis (ReadingSource), at 1.3 tokens a word is 309 tokens/min,
// 5.2 tokens/s. A TPOT below it streams faster than the reader follows.
// The findings, compare and the chat preset all use this one figure.
const ReadingSpeedMs = 194

// ReadingSource is the study ReadingSpeedMs comes from.
var ReadingSource = srcBrysbaert

// ReadingSpeedCite is how a message states a reading speed of ms per
// token, e.g. "194 ms/token, about 5.2 tokens/s: adults' 238 words/min,
// Brysbaert 2019"; the study is named only when ms is its figure.
func ReadingSpeedCite(ms float64) string {
	s := strconv.FormatFloat(ms, 'f', -1, 64) + " ms/token, about " + strconv.FormatFloat(1000/ms, 'f', 1, 64) + " tokens/s"
	if ms == ReadingSpeedMs {
		s += ": adults' 238 words/min, Brysbaert 2019"
	}
	return s
}

// withClaim returns s with its claim set.
func withClaim(s PresetSource, claim string) PresetSource {
	s.Claim = claim
	return s
}

// presets is the table; Presets hands out copies.
var presets = []Preset{
	{
		Name:    "chat",
		Product: "chat assistant: streamed text that a person reads as it arrives",
		Summary: "first token within 450 ms, then 10 tokens/s, faster than people read",
		Request: SLO{TTFT: 450 * time.Millisecond, TPOT: 100 * time.Millisecond},
		Session: SessionSLO{TTP: 2000 * time.Millisecond, TurnTTFTP95: 450 * time.Millisecond},
		Sources: []PresetSource{
			withClaim(srcMLPerfConf, "ttft:450: the llama2-70b-interactive Server scenario bounds TTFT at 450 ms and TPOT at 40 ms (P99); the standard llama2-70b Server scenario at 2000 ms and 200 ms"),
			withClaim(srcDistServeArtifact, "tpot:100: the chatbot (ShareGPT) SLOs are TTFT 0.25 s / TPOT 0.1 s for OPT-13B, 0.4 s / 0.1 s for OPT-66B and 4.0 s / 0.2 s for OPT-175B, at 90% attainment"),
			withClaim(srcDistServeBlog, "a chatbot needs a fast first response (e.g. under 0.2 s) while decoding only needs to match human reading speed"),
			withClaim(srcBrysbaert, "adults read English non-fiction silently at 238 words/min, most at 175-300; 238 × 1.3 = 309 tokens/min = 5.2 tokens/s = 194 ms/token, 300 words/min = 154 ms/token, so tpot:100 (10 tokens/s, about 460 words/min) stays ahead of nearly every reader"),
			srcGeminiTokens,
		},
		Defaults: []string{
			"session turn_ttft_p95:450: the request TTFT limit, over the P95 of a session's turns (later turns resend the history)",
			"session ttp:2000: each turn's first visible answer, reasoning and tool rounds included, within MLPerf's standard (non-interactive) 2 s TTFT bound; no source sets a per-turn TTP",
		},
	},
	{
		Name:    "voice",
		Product: "voice assistant: text-to-speech speaks the answer, starting at its first visible token",
		Summary: "reply starts within a conversational turn gap (200 ms), then stays ahead of speech",
		Request: SLO{TPOT: 200 * time.Millisecond, TTP: 200 * time.Millisecond},
		Session: SessionSLO{TTP: 1000 * time.Millisecond, TurnTTFTP95: 200 * time.Millisecond},
		Sources: []PresetSource{
			withClaim(srcLevinson, "ttp:200: the gaps between conversational turns are short, of the order of 200 ms; the model's first visible token has to fit in that gap, before text-to-speech adds its own delay"),
			withClaim(srcStivers, "across 10 languages speakers avoid overlap and minimise silence between turns; the languages' mean gaps lie within 250 ms of the cross-language mean"),
			withClaim(srcBrysbaert, "tpot:200: reading aloud runs at 183 words/min, in line with listening speed; 183 × 1.3 = 238 tokens/min = 4.0 tokens/s = 252 ms/token, rounded down to 200 ms so speech never waits for the model"),
			srcGeminiTokens,
		},
		Defaults: []string{
			"ttp rather than ttft: hidden reasoning is silence to a listener, so the limit is on the first visible token (which also bounds TTFT)",
			"session turn_ttft_p95:200: the request limit, over the P95 of a session's turns",
			"session ttp:1000: a turn with tool rounds still starts answering within a second; no source sets this",
		},
	},
	{
		Name:    "code-completion",
		Product: "inline code completion in an editor: a suggestion is shown when it has arrived",
		Summary: "suggestion starts within 125 ms and is complete within 1 s, before the developer types on",
		Request: SLO{TTFT: 125 * time.Millisecond, E2E: 1000 * time.Millisecond},
		Sources: []PresetSource{
			withClaim(srcDistServeArtifact, "ttft:125: the code-completion (HumanEval, OPT-66B) SLO is TTFT 0.125 s with TPOT 0.2 s, at 90% attainment"),
			withClaim(srcDistServeBlog, "code completion requires a fast end-to-end generation time for real-time suggestions"),
			withClaim(srcCopilotTalk, "GitHub Copilot serves over 400 million completion requests a day with a mean response time under 200 ms (as summaries of the talk report it)"),
		},
		Defaults: []string{
			"e2el:1000: no source sets a per-request end-to-end limit; 1 s is five times Copilot's reported mean response time",
			"no tpot: DistServe pairs TTFT 125 ms with TPOT 200 ms, but a suggestion is judged whole, which e2el bounds",
		},
	},
	{
		Name:    "batch",
		Product: "offline batch jobs: evaluations, data generation, a backlog to summarise; nobody waits on one request",
		Summary: "throughput only: no latency constraint, so goodput is every successful request",
		Sources: []PresetSource{
			withClaim(srcMLPerfConf, "the Offline scenario sets no TTFT or TPOT bound (only the Server scenarios do): it measures throughput alone"),
		},
	},
	{
		Name:    "agent",
		Product: "agent loop: a program reads the tokens (tool calls, reasoning) and a person waits for the turn's answer",
		Summary: "each model call within MLPerf's reasoning-model bounds; each turn answers within a minute",
		Request: SLO{TTFT: 2000 * time.Millisecond, TPOT: 80 * time.Millisecond},
		Session: SessionSLO{TTP: 60000 * time.Millisecond, TurnTTFTP95: 2000 * time.Millisecond},
		Sources: []PresetSource{
			withClaim(srcMLPerfConf, "ttft:2000 tpot:80: the deepseek-r1 Server scenario bounds TTFT at 2000 ms and TPOT at 80 ms (P99), the bounds MLPerf gives a reasoning model"),
		},
		Defaults: []string{
			"no request ttp: tool-call rounds carry no visible token and would all fail it; the session's ttp judges the answer",
			"session turn_ttft_p95:2000: the request TTFT limit, over the P95 of a session's turns",
			"session ttp:60000: every turn, with all its tool rounds, starts its answer within a minute; no source sets this",
		},
	},
}
