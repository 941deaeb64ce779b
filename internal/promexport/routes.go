package promexport

import "github.com/goodput/goodput/internal/wire/protocols"

// Route labels: each wire protocol's route, as the protocols table has it,
// and everything else. They are variables only because the table is; they
// never change.
var (
	RouteCompletions = route("openai")
	RouteChat        = route("openai-chat")
	RouteResponses   = route("openai-responses")
	RouteMessages    = route("anthropic-messages")
	RouteEmbeddings  = route("openai-embeddings")
)

// RouteOther labels every request of no protocol.
const RouteOther = "other"

// route is the route label of the protocol named.
func route(name string) string {
	p, ok := protocols.Lookup(name)
	if !ok {
		panic("promexport: no protocol " + name) // the table lost one the exporter names
	}
	return p.Route()
}

// RouteOf maps a request path to its route label: its protocol's route
// (protocols.OfPath). A path ending in a protocol's route counts as that
// route whatever prefix a gateway puts in front (e.g.
// /openai/v1/chat/completions), so the label set stays fixed.
func RouteOf(path string) string {
	if p, ok := protocols.OfPath(path); ok {
		return p.Route()
	}
	return RouteOther
}
