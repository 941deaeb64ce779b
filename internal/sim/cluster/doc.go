// Package cluster simulates several serving engines behind a router in
// virtual time: N sim.Engines (each of its own configuration) sharing one
// clock, a router that picks a replica for each request as it arrives
// (round-robin, least-outstanding, least-kv, prefix-aware,
// session-affinity, dp-balance), and a deterministic event loop that
// always advances to the earliest thing due — the caller's next arrival or
// the end of some replica's iteration — so each replica steps on its own
// schedule; or, with Config.ExpertParallel, all replicas step in lockstep
// as the data-parallel ranks of one expert-parallel MoE deployment.
//
// Like the engine it is a synchronous state machine: no clock, no
// goroutines, no I/O; the caller supplies the times. The same requests at
// the same times always give the same routing and the same events.
//
// Later increments of the cluster simulator (prefill/decode pools, an
// autoscaler) belong here too.
package cluster
