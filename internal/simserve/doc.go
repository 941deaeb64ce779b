// Package simserve is the wall-clock face of the simulated engine: an
// OpenAI-compatible HTTP server whose tokens leave at the times the engine
// (package sim) computes, so any benchmark client can measure it as it
// would measure vLLM.
//
// It serves POST /v1/completions and /v1/chat/completions (streaming over
// SSE and not; usage with prompt_tokens_details.cached_tokens and
// completion_tokens_details.reasoning_tokens; stream_options.include_usage
// and continuous_usage_stats; max_tokens / max_completion_tokens,
// ignore_eos, min_tokens; a thinking model's hidden tokens as
// delta.reasoning_content, or inline <think>…</think> on completions; tool
// calls, see below), GET /v1/models, GET /health, POST /tokenize (vLLM's
// shape) and GET /metrics with vLLM V1's metric names, labels and histogram
// buckets, on a registry passed in (never the global one).
//
// The same engine answers three more wire APIs, so every client protocol
// is tested end to end offline: POST /v1/messages (Anthropic's Messages:
// message_start, thinking / text / tool_use content blocks, message_delta
// with the final usage, message_stop; cache hits as
// cache_read_input_tokens), POST /v1/responses (OpenAI's Responses:
// reasoning, message and function_call output items, response.completed or
// response.incomplete with usage; stored responses chain by
// previous_response_id, the stored history planned ahead of the new input
// so the prefix cache hits it) and POST /v1/embeddings (each input a
// prompt-only request: the answer leaves when the last input's prefill
// ends, so embedding latency depends on load; deterministic unit vectors).
//
// POST /goodput/slowdown?factor=F (and serve --slowdown, --slowdown-after)
// stretches every engine step F times from then on: a vendor degrading on
// purpose, for SLA watching.
//
// # What the simulated model says
//
// Prompts are counted with tokenize.Approx (plus Options.ChatTokensPerMessage
// per chat message), so prompts synthesized with Approx are exact. Each
// generated token is one filler word (" the", " of", ...), itself one Approx
// token. With ignore_eos a request generates max_tokens (or what
// max_model_len leaves); without it, it stops at its natural length: a
// log-normal draw (median Options.NaturalOutputMedian, default 200 tokens,
// σ = 0.8) seeded by a hash of the prompt's tokens, so the same prompt always
// gets the same length; that length is capped by max_tokens (finish_reason
// "length") and raised to min_tokens (finish_reason "stop" otherwise).
// Prompt blocks of the engine's block size are hashed (chained, as vLLM's
// prefix-cache keys are), so requests that share a prefix hit the simulated
// prefix cache.
//
// # Tool calls
//
// Chat requests may declare tools (OpenAI's "tools", "tool_choice"), resend
// assistant messages with "tool_calls" and answer them with "tool" messages
// (which need "tool_call_id"); the calls' names and arguments and the tool
// results count into the prompt's tokens and block hashes like any text, so
// an agent loop that resends its history hits the prefix cache. The answer
// is tool calls when the request header [ToolCallsHeader] names them
// (exactly those, in parallel), or else, when the last message is the
// user's and tool_choice is not "none", with probability
// sim.Config.ToolCallShare decided by the prompt's hash ("required" and a
// named function always call). Each call is sim.Config.ToolCallTokens
// hidden tokens (sim.DefaultToolCallTokens when 0): the first carries the
// call's id and name, each later one a fragment of its arguments, a JSON
// object {"<first parameter>":"word word ..."}; finish_reason is
// "tool_calls" and usage counts the calls' tokens as reasoning_tokens, the
// hidden part of completion_tokens.
//
// # Timing and flow control
//
// One goroutine (Run) owns the engine; see [Server] for how tokens are
// handed to handlers without ever blocking on a client. A streaming
// response's headers (and a chat stream's role-only first chunk) are sent
// once the engine has admitted the request, so an immediate admission
// rejection is a 429 with Retry-After; a later one (a request queued past
// max queue time) ends the stream with an error event. Client disconnects
// abort the request in the engine, freeing its KV blocks.
//
// # A fleet
//
// [NewFleet] serves a cluster (package sim/cluster: N engines behind a
// router, one virtual clock) behind the same port, through the [cluster.Fleet]
// interface: every vLLM series once per replica, labelled engine="1" to
// "N" (replicas are numbered from 1, as the client's reports number them); the
// replica named in each answer's [ReplicaHeader]; a request's session for
// session-affinity routing read from [SessionHeader]. While a replica is
// idle the loop sleeps until the next iteration's end or an arrival,
// stepping the fleet no further than now, so a request arriving during
// another replica's iteration starts on time. The cluster may sit behind
// a gateway (rate limits answered 429 with the bucket's Retry-After,
// classes from the body's priority field), be a prefill/decode split (the
// first token from the prefill replica, the rest from the decode one), or
// be autoscaled (the loop also wakes at the controller's ticks; each
// change of the fleet's size is logged).
package simserve
