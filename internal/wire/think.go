package wire

// ThinkSplitter classifies the bytes of a streamed response's content as
// visible or hidden when a server puts reasoning inline as
// "<think>…</think>" instead of in a separate reasoning field.
//
// The rules, chosen so that TTP (time to the first visible token) means what
// a user sees:
//   - Only a "<think>" at the very start of the response, after optional
//     whitespace, opens a hidden section; a "<think>" anywhere later is
//     ordinary visible text (a model quoting the tag is not reasoning).
//   - Everything from that tag up to and including the first "</think>" is
//     hidden; an unclosed section stays hidden to the end.
//   - Whitespace before the answer's first other byte (at the start, or
//     right after "</think>") is hidden too: it shows the user nothing, yet
//     it is generated, so it still counts toward TTFT.
//   - Everything after that is visible.
//
// Tags may be split across chunks ("<thi" + "nk>"). While the start of the
// response could still be "<think>", its bytes count as hidden, so the chunk
// still counts as a generated token for TTFT. Should they turn out not to be
// a tag ("<th" + "e answer"), the chunk that decides moves them to visible:
// it reports them in visible and subtracts them from hidden, which is then
// negative. So for every Feed visible+hidden == len(p), and the totals over
// a response do not depend on how it was split into chunks. A response that
// ends while still a proper prefix of "<think>" stays hidden.
//
// The zero value is ready for a response that starts outside reasoning. A
// ThinkSplitter serves one response and is not safe for concurrent use.
type ThinkSplitter struct {
	// StartHidden makes the response start inside a think section, for chat
	// templates that put "<think>" in the prompt (DeepSeek-R1, Qwen3 with
	// thinking forced): the content then holds only "…</think>answer".
	// Set it before the first Feed.
	StartHidden bool

	state   thinkState
	matched int // bytes of the tag being matched ("<think>" or "</think>"), already counted hidden
	started bool
}

type thinkState uint8

const (
	thinkLead    thinkState = iota // only whitespace so far
	thinkOpening                   // matching "<think>" at the start
	thinkInside                    // hidden section; matching "</think>"
	thinkAfter                     // after "</think>", only whitespace since
	thinkVisible                   // the answer has begun: all visible
)

const (
	openTag  = "<think>"
	closeTag = "</think>"
)

// Feed classifies the next chunk of content and returns how many of its
// bytes are visible and how many hidden; visible+hidden == len(p). hidden is
// negative only when bytes of earlier chunks that looked like the start of
// "<think>" turn out to be visible text (see the type's comment).
func (s *ThinkSplitter) Feed(p []byte) (visible, hidden int) {
	if !s.started {
		s.started = true
		if s.StartHidden {
			s.state = thinkInside
		}
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch s.state {
		case thinkVisible:
			return visible + len(p) - i, hidden
		case thinkLead, thinkAfter:
			switch {
			case isSpace(c):
				hidden++
			case c == '<' && s.state == thinkLead:
				s.state, s.matched = thinkOpening, 1
				hidden++
			default:
				s.state = thinkVisible
				visible++
			}
		case thinkOpening:
			if c == openTag[s.matched] {
				hidden++
				s.matched++
				if s.matched == len(openTag) {
					s.state, s.matched = thinkInside, 0
				}
				continue
			}
			// Not a think tag after all: the bytes counted hidden so far
			// and all that follows are the visible answer.
			visible += s.matched + 1
			hidden -= s.matched
			s.state, s.matched = thinkVisible, 0
		case thinkInside:
			hidden++
			switch {
			case c == closeTag[s.matched]:
				s.matched++
				if s.matched == len(closeTag) {
					s.state, s.matched = thinkAfter, 0
				}
			case c == '<':
				// "<" is the tag's only repeated byte, so a mismatch
				// restarts the match here or nowhere.
				s.matched = 1
			default:
				s.matched = 0
			}
		}
	}
	return visible, hidden
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
