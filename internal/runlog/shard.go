package runlog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A run split over several processes (goodput bench --shard I/N) writes one
// records file per shard. Every shard draws the same global schedule and
// sends its share of it, so the shards' records together are one run's: the
// meta line says which shard a file is (Shard), each level as it ended says
// what the whole level was and what the shard sent of it (LevelShard), and
// Merge checks that every shard is there, whole, before it puts the records
// on one clock (ShardSummary).

// Shard identifies one shard of a distributed run; it is in the meta line
// of each shard's records file.
type Shard struct {
	// Index is the shard's number, from 0, of Count shards.
	Index int `json:"index"`
	Count int `json:"count"`
	// Run names the distributed run, the same in every shard's file when
	// the shards agreed on a start ("" when each started on its own); it
	// is in every request id, which is otherwise the request's index in
	// the global schedule, so ids never collide across shards.
	Run string `json:"run,omitempty"`
	// StartAt is the wall-clock instant every shard's measured schedule
	// started from (its time zero); zero when the shard started on its own.
	StartAt time.Time `json:"start_at,omitzero"`
	// Requests is how many requests the shard's share of each level holds,
	// warm-ups included (0: not known ahead, as for a level bounded by
	// time); Sessions likewise the sessions of a session run.
	Requests int `json:"requests,omitempty"`
	Sessions int `json:"sessions,omitempty"`
	// Clock is the shard's wall clock measured against the target's (nil:
	// not measured).
	Clock *ClockOffset `json:"clock,omitempty"`
}

// ClockOffset is a machine's wall clock measured against a server's.
type ClockOffset struct {
	// OffsetNs is the machine's clock minus the server's, ns (positive:
	// the machine is ahead): the middle of the range the samples leave.
	// ErrorNs is half that range's width, so the offset is within
	// OffsetNs ± ErrorNs. The HTTP Date header has a resolution of one
	// second; samples spread over a second's phases narrow the range to
	// about their spacing plus a round trip.
	OffsetNs int64 `json:"offset_ns"`
	ErrorNs  int64 `json:"error_ns"`
	// Source says what was read: "http-date" (the server's Date header).
	Source string `json:"source"`
	// Samples counts the responses the range is made of.
	Samples int `json:"samples"`
}

// LevelShard is, on a level of one shard's run, what the shard did of the
// whole level. It is set as the level ends (the records file's end line):
// a shard's file whose levels lack it stopped before its end.
type LevelShard struct {
	// Whole is the level of the whole run, all shards together (its rate,
	// concurrency cap and request count), of which the level is the
	// shard's share.
	Whole Level `json:"whole"`
	// Sent counts the requests the shard sent in the level, warm-ups
	// included; each has its record.
	Sent int `json:"sent"`
}

// ShardSummary is one shard of a run merged from shards' files, as Merge
// found it; Meta.Shards lists them in shard order, missing ones included.
type ShardSummary struct {
	// Index is the shard's number, from 0, of Count shards.
	Index int `json:"index"`
	Count int `json:"count"`
	// Name is the file (or run of a file) that held the shard; "" when
	// none did (Missing).
	Name    string `json:"name,omitempty"`
	Missing bool   `json:"missing,omitempty"`
	// Ended says the shard's file has its end line: the shard finished.
	Ended bool `json:"ended"`
	// Expected is the requests the shard's share held over its levels,
	// warm-ups included (0: not known ahead); Sent the requests it says it
	// sent (its end line; -1: unknown, no end line); Records the records
	// that reached the merge.
	Expected int `json:"expected,omitempty"`
	Sent     int `json:"sent"`
	Records  int `json:"records"`
	// ExpectedSessions is the sessions its share held (0: not a session
	// run, or not known) and Sessions those with a record in the merge.
	ExpectedSessions int `json:"expected_sessions,omitempty"`
	Sessions         int `json:"sessions,omitempty"`
	// Short is how many requests (sessions, for a session run) of the
	// shard's share are not in the merge: its share less what it sent and
	// recorded; 0 when whole or not known.
	Short int `json:"short,omitempty"`
	// StartAt is the start the shard waited for (zero: none) and Clock its
	// clock against the target's (nil: not measured).
	StartAt time.Time    `json:"start_at,omitzero"`
	Clock   *ClockOffset `json:"clock,omitempty"`
	// ClientCPU is the highest CPU share the shard's client used in any
	// level (0–1; 0: not measured); DelayedArrivals its arrivals held by a
	// full concurrency cap.
	ClientCPU       float64 `json:"client_cpu,omitempty"`
	DelayedArrivals int     `json:"delayed_arrivals,omitempty"`
	// From and To bound the shard's records in the merged records
	// (records[From:To]): Merge keeps each file's records together, in
	// file order.
	From int `json:"-"`
	To   int `json:"-"`
}

// ShareOf is shard index's share of n items dealt round-robin over count
// shards (item k goes to shard k mod count): n/count, plus one for the
// first n mod count shards. The shares of all shards add up to n; 0 for an
// index outside [0, count).
func ShareOf(n, index, count int) int {
	if count < 1 || index < 0 || index >= count || n <= 0 {
		return 0
	}
	s := n / count
	if index < n%count {
		s++
	}
	return s
}

// whole is the merged level a shard's level counts toward: the whole
// level it was a share of (as it ended), or, for a level as planned (a
// shard that stopped before its end), the level itself, which describes
// the whole already. What the shard did (delayed arrivals, client CPU, an
// early stop) comes along, to be added to the other shards'.
func (l Level) whole() Level {
	w := l
	if l.Shard != nil {
		w = l.Shard.Whole
	}
	w.Shard = nil
	w.DelayedArrivals, w.ClientCPU, w.Stopped = l.DelayedArrivals, l.ClientCPU, l.Stopped
	return w
}

// addPart folds one more shard's level into the merged whole m: delayed
// arrivals add up, the client CPU is the busiest shard's (one client-bound
// shard skews the whole run), an early stop is kept.
func addPart(m, lv Level) Level {
	m.DelayedArrivals = satAdd(m.DelayedArrivals, lv.DelayedArrivals)
	m.ClientCPU = max(m.ClientCPU, lv.ClientCPU)
	m.Stopped = cmp.Or(m.Stopped, lv.Stopped)
	return m
}

// checkShards checks the shard files among files (those whose meta line
// has a Shard): one count, one run, each shard once, and every shard of
// the count present and whole. It returns a summary per shard in shard
// order (missing ones included), the summary of each file (-1 for a file
// that is not a shard), and warnings naming each shard missing or short and
// by how much. Files that disagree are an error wrapping ErrIncompatible
// unless force; no file is a shard: all nil.
func checkShards(files []RecordsFile, force bool) ([]ShardSummary, []int, []string, error) {
	byFile := make([]int, len(files))
	var first *RecordsFile
	var warns []string
	for i := range files {
		byFile[i] = -1
		f := &files[i]
		if f.Meta == nil || f.Meta.Shard == nil {
			continue
		}
		s := f.Meta.Shard
		if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
			return nil, nil, nil, fmt.Errorf("%s: shard %d of %d in its meta line: want an index from 0 to count−1", f.Name, s.Index, s.Count)
		}
		if first == nil {
			first = f
		}
	}
	if first == nil {
		return nil, nil, nil, nil
	}
	refuse := func(msg string) error {
		if !force {
			return fmt.Errorf("%w: %s", ErrIncompatible, msg)
		}
		warns = append(warns, msg+": merged anyway, as forced")
		return nil
	}
	count := first.Meta.Shard.Count
	var sums []ShardSummary
	seen := map[int]string{}
	for i := range files {
		f := &files[i]
		if f.Meta == nil || f.Meta.Shard == nil {
			if err := refuse(fmt.Sprintf("%s is shard %d of %d of a distributed run, %s is not a shard", first.Name, first.Meta.Shard.Index, count, f.Name)); err != nil {
				return nil, nil, warns, err
			}
			continue
		}
		s := f.Meta.Shard
		switch {
		case s.Count != count:
			if err := refuse(fmt.Sprintf("%s is one of %d shards, %s one of %d", first.Name, count, f.Name, s.Count)); err != nil {
				return nil, nil, warns, err
			}
		case s.Run != "" && first.Meta.Shard.Run != "" && s.Run != first.Meta.Shard.Run:
			if err := refuse(fmt.Sprintf("%s and %s are shards of different runs (run %s vs %s)", first.Name, f.Name, first.Meta.Shard.Run, s.Run)); err != nil {
				return nil, nil, warns, err
			}
		}
		if other, dup := seen[s.Index]; dup {
			if err := refuse(fmt.Sprintf("%s and %s are both shard %d of %d", other, f.Name, s.Index, s.Count)); err != nil {
				return nil, nil, warns, err
			}
		}
		seen[s.Index] = f.Name
		byFile[i] = len(sums)
		sums = append(sums, summarizeShard(f))
	}
	for k := range count {
		if _, ok := seen[k]; !ok {
			sums = append(sums, ShardSummary{Index: k, Count: count, Missing: true, Sent: -1})
		}
	}
	// Shard order; a file's summary index follows its summary.
	order := make([]int, len(sums))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sums[a].Index, sums[b].Index) })
	moved := make([]int, len(sums))
	sorted := make([]ShardSummary, len(sums))
	for to, from := range order {
		sorted[to], moved[from] = sums[from], to
	}
	for i, s := range byFile {
		if s >= 0 {
			byFile[i] = moved[s]
		}
	}
	for i := range sorted {
		if w := shardWarning(&sorted[i]); w != "" {
			warns = append(warns, w)
		}
	}
	return sorted, byFile, warns, nil
}

// summarizeShard is what one shard's file holds against what its share
// held.
func summarizeShard(f *RecordsFile) ShardSummary {
	m := f.Meta
	s := m.Shard
	sum := ShardSummary{Index: s.Index, Count: s.Count, Name: f.Name, StartAt: s.StartAt, Clock: s.Clock,
		Records: len(f.Records), To: len(f.Records), Ended: len(m.Levels) > 0}
	for _, lv := range m.Levels {
		sum.ClientCPU = max(sum.ClientCPU, lv.ClientCPU)
		sum.DelayedArrivals = satAdd(sum.DelayedArrivals, lv.DelayedArrivals)
		if lv.Shard == nil {
			sum.Ended = false
		}
	}
	sum.Sent = -1
	if sum.Ended {
		sum.Sent = 0
		for _, lv := range m.Levels {
			sum.Sent = satAdd(sum.Sent, lv.Shard.Sent)
		}
	}
	if s.Requests > 0 {
		sum.Expected = s.Requests * max(len(m.Levels), 1)
	}
	if s.Sessions > 0 {
		sum.ExpectedSessions = s.Sessions
		seen := map[string]bool{}
		for i := range f.Records {
			if k := sessionKey(&f.Records[i]); k != "" {
				seen[k] = true
			}
		}
		sum.Sessions = len(seen)
		sum.Short = max(sum.ExpectedSessions-sum.Sessions, 0)
		return sum
	}
	switch {
	case sum.Expected > 0:
		sum.Short = max(sum.Expected-sum.Records, 0)
	case sum.Sent >= 0:
		sum.Short = max(sum.Sent-sum.Records, 0)
	}
	return sum
}

// sessionKey names the session a record belongs to: its request id up to
// the turn ("…s12-t3-r1" → "…s12"), unique to one run of the session even
// where the session set repeats its ids; "" for a record of no session.
func sessionKey(r *Record) string {
	if r.SessionID == "" {
		return ""
	}
	if i := strings.LastIndex(r.ID, "-t"); i > 0 {
		return r.ID[:i]
	}
	return r.SessionID
}

// shardWarning is the line saying what is wrong with one shard ("" when it
// is whole).
func shardWarning(s *ShardSummary) string {
	who := fmt.Sprintf("shard %d of %d", s.Index, s.Count)
	unit, want, have := "requests", s.Expected, s.Records
	if s.ExpectedSessions > 0 {
		unit, want, have = "sessions", s.ExpectedSessions, s.Sessions
	}
	switch {
	case s.Missing:
		return fmt.Sprintf("%s is missing: no records file of it was given, so its share of the load is not in the merge", who)
	case !s.Ended && want > 0:
		return fmt.Sprintf("%s (%s) has no end line: the shard stopped before its end (killed, or still running); its %d finished records are merged, %d of the %d %s its share held are not (%s short)",
			s.Name, who, s.Records, s.Short, want, unit, pct(s.Short, want))
	case !s.Ended:
		return fmt.Sprintf("%s (%s) has no end line: the shard stopped before its end (killed, or still running); its %d finished records are merged", s.Name, who, s.Records)
	case s.Sent >= 0 && s.Records < s.Sent:
		return fmt.Sprintf("%s (%s) sent %d requests but holds %d records: %d lost", s.Name, who, s.Sent, s.Records, s.Sent-s.Records)
	case s.Short > 0:
		return fmt.Sprintf("%s (%s) has %d of the %d %s its share held: %d short (%s), it stopped early", s.Name, who, have, want, unit, s.Short, pct(s.Short, want))
	}
	return ""
}

func pct(a, b int) string {
	if b <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(a)/float64(b))
}
