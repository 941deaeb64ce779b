package promexport

import "strings"

// Route labels: the two streamed LLM routes and everything else.
const (
	RouteCompletions = "/v1/completions"
	RouteChat        = "/v1/chat/completions"
	RouteOther       = "other"
)

// RouteOf maps a request path to its route label. A path ending in
// /chat/completions or /completions counts as that route whatever prefix a
// gateway puts in front (e.g. /openai/v1/chat/completions), so the label
// set stays fixed at three values.
func RouteOf(path string) string {
	path = strings.TrimRight(path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return RouteChat
	case strings.HasSuffix(path, "/completions"):
		return RouteCompletions
	}
	return RouteOther
}
