package run

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/scrape"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/target"
)

// The user's target settings live in package target, which knows nothing
// of a run; these adapters make a run's Target and scraping of them.

// NewTarget is the run's Target of t, a target.Spec built: its client, a
// wire.Client, is the run's Backend.
func NewTarget(t target.Target) Target {
	return Target{
		BaseURL: t.BaseURL, Name: t.Name, API: t.API, Endpoint: t.Endpoint, Model: t.Model,
		NoStream: t.NoStream, ReadyWait: t.ReadyWait, RequestIDPrefix: t.RequestIDPrefix,
		Open: func(baseURL string, maxConns int, now func() int64) (Backend, error) {
			c, err := t.Open(baseURL, maxConns, now)
			if err != nil {
				return nil, err // not a nil *wire.Client inside a Backend
			}
			return c, nil
		},
	}
}

// ScrapeFor is the scraping of the server's metrics t asks for
// (ServerMetrics every ScrapeInterval); nil for none.
func ScrapeFor(t *target.Spec) (*ScrapeConfig, error) {
	if t.ScrapeInterval < time.Millisecond {
		return nil, setting.Errorf("ScrapeInterval", t.ScrapeInterval.String(), "want at least 1ms")
	}
	cfg := &ScrapeConfig{Auto: true, Interval: t.ScrapeInterval}
	for i, v := range t.ServerMetrics {
		if strings.EqualFold(strings.TrimSpace(v), "none") {
			if len(t.ServerMetrics) > 1 {
				return nil, setting.Errorf("ServerMetrics", "none", "scrape nothing, so give no other %v", setting.Name("ServerMetrics"))
			}
			return nil, nil
		}
		name, url, ok := strings.Cut(v, "=")
		if !ok || strings.Contains(name, "/") {
			name, url = fmt.Sprintf("metrics-%d", i+1), v
		}
		if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
			return nil, setting.Errorf("ServerMetrics", strconv.Quote(v), "want an http(s) URL, NAME=URL, or none")
		}
		cfg.Targets = append(cfg.Targets, scrape.Target{Name: name, URL: url})
	}
	return cfg, nil
}
