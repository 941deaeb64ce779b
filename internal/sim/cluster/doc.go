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
// Around the Cluster, with the same contract: Disagg splits the replicas
// into a prefill pool and a decode pool with a KV link between them
// (NewDisagg); Gateway puts admission (token buckets), priority classes
// (queues or pools) and overload degradation in front (NewGateway); a
// Config.Autoscale adds and removes replicas on a signal; Parse reads a
// cluster file of pools.
package cluster
