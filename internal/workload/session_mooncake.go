package workload

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// MooncakeSessionsConfig configures ReadMooncakeSessions.
type MooncakeSessionsConfig struct {
	// NumSessions caps the number of sessions, the earliest-starting first;
	// 0 means all.
	NumSessions int
}

// MooncakeStats says how a trace's requests became sessions. Requests =
// Starts + Continuations.
type MooncakeStats struct {
	// Requests is the number of requests in the trace.
	Requests int
	// Starts is the number of requests that start a session (the sessions
	// before NumSessions applies), Forks included.
	Starts int
	// Continuations is the number of requests that continue a session.
	Continuations int
	// Forks counts requests that extend a turn which already had a next
	// turn (a regenerated or edited reply): they start a new session.
	Forks int
	// Clamped counts continuing turns whose prompt grew by less than the
	// previous reply's length (the history did not keep the whole reply):
	// their new input was set to 1 token; ClampedTokens is the sum of the
	// shortfalls, tokens by which replayed prompts exceed the trace's.
	Clamped, ClampedTokens int
	// SharedOnly counts requests that start a session although they extend
	// an earlier turn, because every block they share with it was sent by
	// another session too: the hashes cannot tell such a continuation from
	// a new conversation with the same prefix.
	SharedOnly int
	// NoHashes counts requests without hash_ids: each is a session of one
	// turn.
	NoHashes int
}

// mcKey identifies a trie node: its parent node and its block's hash.
type mcKey struct {
	parent int32
	hash   uint64
}

// mcNode is a prefix of blocks that some request sent.
type mcNode struct {
	creator int32 // session of the first request that sent this prefix
	// common: requests of another session sent it too (a shared system
	// prompt or document): no turn can be recognised by it.
	common bool
	// own is the latest request whose full blocks end here and whose
	// session created the node, -1 if none: the turn a later request with
	// this prefix continues.
	own int32
}

// LoadMooncakeSessions recovers sessions from a Mooncake trace (JSON Lines
// of {"timestamp": ms, "input_length", "output_length", "hash_ids"}, where
// hash_ids name the prompt's consecutive 512-token blocks, the last one
// possibly partial).
//
// A request continues an earlier request p when its hash_ids start with
// p's full blocks (floor(input_length/512) of them: p's partial last block
// is completed by its reply and the next message, so its hash changes), its
// prompt is longer than p's, and those blocks are p's conversation's own:
// the deepest of them was sent by p's session alone, not a prefix that
// several sessions share (a common system prompt, a shared document). Of
// several such p the longest prefix wins, then the latest; all of them are
// of one session, since a prefix that two sessions sent is shared. A
// request extending a turn that already has a next turn starts a new
// session (a fork). Every other request starts a session. The first
// session to send a shared prefix owns it until a second one does: a short
// first conversation can absorb the next session that shares its prefix.
//
// A session keeps its first request's arrival (Arrival, from the trace's
// first request); its first turn's SystemTokens are the full blocks it
// shares with earlier sessions (at most its prompt less one token). A
// continuing turn's InputTokens is its prompt's growth beyond the previous
// prompt and reply (at least 1; see MooncakeStats.Clamped), its
// OutputTokens the trace's, and its ThinkTime the gap between the two
// arrivals, counted from the previous send (Session.ThinkFromSend): the
// trace does not say when the previous reply ended.
func LoadMooncakeSessions(path string, cfg MooncakeSessionsConfig) (*Sessions, MooncakeStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, MooncakeStats{}, err
	}
	defer f.Close()
	return ReadMooncakeSessions(f, path, cfg)
}

// ReadMooncakeSessions is LoadMooncakeSessions over a reader; file names it
// in errors and in the set's name ("mooncake-sessions:" and its base name).
func ReadMooncakeSessions(r io.Reader, file string, cfg MooncakeSessionsConfig) (*Sessions, MooncakeStats, error) {
	var st MooncakeStats
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, st, fmt.Errorf("%s: %w", file, err)
	}
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, st, fmt.Errorf("%s:1: want Mooncake JSON Lines ({\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"})", file)
	}
	rs, err := readTraceJSONL(data, file)
	if err != nil {
		return nil, st, err
	}
	if len(rs) == 0 {
		return nil, st, fmt.Errorf("%s: no requests in trace", file)
	}
	hashed := false
	for k, row := range rs {
		if k > 0 && row.t < rs[k-1].t {
			return nil, st, fmt.Errorf("%s:%d: timestamp goes back in time (%.6g s before line %d's); traces must be sorted by time",
				file, row.line, rs[k-1].t-row.t, rs[k-1].line)
		}
		if math.IsNaN(row.t) || math.IsInf(row.t, 0) || math.Abs(row.t) > 1e9 {
			return nil, st, fmt.Errorf("%s:%d: timestamp out of range", file, row.line)
		}
		hashed = hashed || len(row.hashes) > 0
	}
	if !hashed {
		return nil, st, fmt.Errorf("%s: no request has hash_ids; sessions cannot be recovered (want a Mooncake trace)", file)
	}
	st.Requests = len(rs)
	sessions, shared := linkMooncake(rs, &st)

	t0 := rs[0].t
	d := &Sessions{name: "mooncake-sessions:" + filepath.Base(file)}
	for _, reqs := range sessions {
		first := rs[reqs[0]]
		s := Session{
			ID:            "line-" + strconv.Itoa(first.line),
			Arrival:       time.Duration(math.Round((first.t - t0) * 1e9)),
			HasArrival:    true,
			ThinkFromSend: true,
		}
		for k, q := range reqs {
			row := rs[q]
			t := Turn{Role: RoleUser, OutputTokens: row.out}
			if k == 0 {
				// Only whole blocks are known to be shared; keep a token
				// for the turn's own message.
				blocks := min(shared[q], row.in/MooncakeBlockTokens)
				s.SystemTokens = max(min(blocks*MooncakeBlockTokens, row.in-1), 0)
				t.InputTokens = max(row.in-s.SystemTokens, 1)
			} else {
				p := rs[reqs[k-1]]
				grow := row.in - p.in - p.out
				if grow < 1 {
					st.Clamped++
					st.ClampedTokens += 1 - grow
					grow = 1
				}
				t.InputTokens = grow
				t.ThinkTime = time.Duration(math.Round((row.t - p.t) * 1e9))
			}
			s.Turns = append(s.Turns, t)
		}
		d.sessions = append(d.sessions, s)
		d.lines = append(d.lines, first.line)
	}
	// Stats describe the whole trace; the cap applies after.
	if n := cfg.NumSessions; n > 0 && n < len(d.sessions) {
		d.sessions, d.lines = d.sessions[:n], d.lines[:n]
	}
	return d, st, nil
}

// linkMooncake returns each session's requests in order, sessions in order
// of their first request, and for each session's first request the number
// of its leading blocks that earlier requests had sent. It walks a trie of
// block prefixes: O(total blocks).
func linkMooncake(rs []traceRow, st *MooncakeStats) (sessions [][]int, shared []int) {
	children := make(map[mcKey]int32, len(rs)*8)
	var nodes []mcNode
	sessOf := make([]int32, len(rs))
	last := []int{} // each session's latest request
	shared = make([]int, len(rs))
	for q, row := range rs {
		if len(row.hashes) == 0 {
			st.NoHashes++
		}
		// Find the deepest continuable turn on q's path.
		best, bestSess, depth := -1, int32(-1), 0
		sharedOnly := false
		parent := int32(-1)
		for k, h := range row.hashes {
			id, ok := children[mcKey{parent, h}]
			if !ok {
				break
			}
			depth = k + 1
			if p := nodes[id].own; p >= 0 && nodes[id].common && row.in > rs[p].in {
				sharedOnly = true
			} else if p >= 0 && row.in > rs[p].in {
				// Deeper wins; the candidates on one path are all of
				// one session, since a node another session sent is
				// common.
				best, bestSess = int(p), sessOf[p]
			}
			parent = id
		}
		var s int32
		switch {
		case best >= 0 && last[bestSess] == best:
			s = bestSess
			st.Continuations++
			sessions[s] = append(sessions[s], q)
		default:
			if best >= 0 {
				st.Forks++
			} else if sharedOnly {
				st.SharedOnly++
			}
			s = int32(len(sessions))
			st.Starts++
			sessions = append(sessions, []int{q})
			last = append(last, 0)
			shared[q] = depth
		}
		sessOf[q], last[s] = s, q
		// Insert q's path; mark the node of its full blocks as its own.
		full := min(row.in/MooncakeBlockTokens, len(row.hashes))
		parent = -1
		for k, h := range row.hashes {
			key := mcKey{parent, h}
			id, ok := children[key]
			if !ok {
				id = int32(len(nodes))
				nodes = append(nodes, mcNode{creator: s, own: -1})
				children[key] = id
			} else if nodes[id].creator != s {
				nodes[id].common = true
			}
			if k+1 == full && nodes[id].creator == s {
				nodes[id].own = int32(q)
			}
			parent = id
		}
	}
	return sessions, shared
}
