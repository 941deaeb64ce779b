package promexport

import "testing"

func TestRouteOf(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/chat/completions":        RouteChat,
		"/v1/chat/completions/":       RouteChat,
		"/openai/v1/chat/completions": RouteChat,
		"/v1/completions":             RouteCompletions,
		"/v1/responses":               RouteResponses,
		"/v1/messages":                RouteMessages,
		"/anthropic/v1/messages/":     RouteMessages,
		"/v1/embeddings":              RouteEmbeddings,
		"/v1/messages/count_tokens":   RouteOther,
		"/v1/models":                  RouteOther,
		"/metrics":                    RouteOther,
		"":                            RouteOther,
	} {
		if got := RouteOf(in); got != want {
			t.Errorf("RouteOf(%q) = %q; want %q", in, got, want)
		}
	}
}
