package promexport

import "strings"

// Route labels: the streamed LLM routes, embeddings, and everything else.
const (
	RouteCompletions = "/v1/completions"
	RouteChat        = "/v1/chat/completions"
	RouteResponses   = "/v1/responses"
	RouteMessages    = "/v1/messages"
	RouteEmbeddings  = "/v1/embeddings"
	RouteOther       = "other"
)

// RouteOf maps a request path to its route label. A path ending in one of
// the routes counts as that route whatever prefix a gateway puts in front
// (e.g. /openai/v1/chat/completions), so the label set stays fixed.
func RouteOf(path string) string {
	path = strings.TrimRight(path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return RouteChat
	case strings.HasSuffix(path, "/completions"):
		return RouteCompletions
	case strings.HasSuffix(path, "/responses"):
		return RouteResponses
	case strings.HasSuffix(path, "/messages"):
		return RouteMessages
	case strings.HasSuffix(path, "/embeddings"):
		return RouteEmbeddings
	}
	return RouteOther
}
