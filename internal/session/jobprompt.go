package session

import "github.com/goodput/goodput/internal/jobgraph"

// Seg is a run of prompt tokens with one identity: prompts made of the
// same segments in the same order are the same text, so a server's
// prefix cache serves what they share.
type Seg struct {
	Key    uint64
	Tokens int
}

// JobPrompt is node i's prompt of prompt tokens as segments, under its
// context rule (jobgraph.Job.Prompts): what it carries from From — under
// Fork, From's own prompt (prior(from)) and then From's answer; under
// Last, the answer alone — then the answers of the other nodes it waits
// for, then its own new tokens, user (whose Tokens it sets to what the
// prompt has left). A carried context longer than the prompt (a
// compacted history) is cut to it. Both drivers build a job's prompts
// here: in virtual time as block identities, over HTTP as text.
func JobPrompt(job *jobgraph.Job, i, prompt int, prior func(k int) []Seg, answer func(k int) Seg, user Seg) []Seg {
	nd := &job.Nodes[i]
	var s []Seg
	from := -1
	if nd.From != "" {
		from = job.Index(nd.From)
	}
	if nd.Context != jobgraph.Spawn {
		if from >= 0 {
			if nd.Context == jobgraph.Fork {
				s = append(s, prior(from)...)
			}
			s = append(s, answer(from))
		}
		for _, a := range nd.After {
			if k := job.Index(a); k != from {
				s = append(s, answer(k))
			}
		}
	}
	total := 0
	for k := range s {
		if total+s[k].Tokens >= prompt {
			s[k].Tokens = prompt - total
			return s[:k+1]
		}
		total += s[k].Tokens
	}
	user.Tokens = prompt - total
	return append(s, user)
}
