package run

import (
	"hash/fnv"
	"math/rand/v2"

	"github.com/goodput/goodput/internal/runlog"
)

// published wraps emit so each virtual-time record reaches it as the
// client would see it behind Config.Publish: its visible output re-timed
// to the publisher's releases. The engine (and the load's closed loop,
// which frees a slot when the server finishes) is not affected: the policy
// sits after the server. Moderation delays are drawn from the seed and the
// request's id, so a rerun draws the same.
func (v *virtual) published(emit func(*runlog.Record) error) func(*runlog.Record) error {
	p := v.cfg.Publish
	if !p.Active() {
		return emit
	}
	return func(r *runlog.Record) error {
		h := fnv.New64a()
		h.Write([]byte(r.ID))
		p.ApplyRecord(r, rand.New(rand.NewPCG(uint64(v.cfg.Seed), h.Sum64())))
		return emit(r)
	}
}
