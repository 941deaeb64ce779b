package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/proxy"
)

// A proxy in front of a (here: scripted) OpenAI-compatible server passes
// the stream through unchanged and measures it.
func Example() {
	stream := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	}))
	defer upstream.Close()

	reg := prometheus.NewRegistry()
	p, err := proxy.New(proxy.Options{Upstream: upstream.URL, Registerer: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	front := httptest.NewServer(p)
	client := &http.Client{Transport: &http.Transport{}}
	resp, err := client.Post(front.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"demo","stream":true,"messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	front.Close()
	p.Close()

	fmt.Println("unchanged:", string(body) == stream)
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "goodput_output_tokens_total" {
			for _, m := range mf.GetMetric() {
				fmt.Println(mf.GetName(), m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// unchanged: true
	// goodput_output_tokens_total 2
}
