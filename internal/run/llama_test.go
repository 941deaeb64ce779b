package run

import (
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/wire"

	"github.com/goodput/goodput/internal/llamafake"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire/openai"
	"github.com/goodput/goodput/internal/workload"
)

// llamaConfig is a calibrated wall-clock run of n requests at concurrency
// conc against a fake llama-server at url.
func llamaConfig(t testing.TB, url string, n, conc int) Config {
	cfg := simConfig(t, n)
	cfg.Command, cfg.Virtual = "bench", false
	cfg.Workload = Workload{Options: workload.Options{DatasetName: "random", RandomInputLen: 64, RandomOutputLen: 8}, Calibrate: true}
	cfg.Load.MaxConcurrency = conc
	cfg.Output.KeepRecords = true
	cfg.Target = Target{BaseURL: url, API: "openai", Endpoint: "/v1/completions", Model: "llamafake",
		Open: func(base string, conns int, now func() int64) (Backend, error) {
			return openai.NewClient(wire.Config{BaseURL: base, Endpoint: "/v1/completions", Model: "llamafake", MaxConns: conns, Now: now})
		}}
	return cfg
}

// Calibration counts with at most the server's slots in flight (its
// /props says them), so no connection waits for one of llama-server's
// slots+2 HTTP threads, and it leaves no connection open: the run's first
// request dials its own.
func TestCalibrationLeavesNoConnections(t *testing.T) {
	s, err := llamafake.Start(llamafake.Config{Slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := llamaConfig(t, s.URL, 40, 2)
	w, err := openWall(t.Context(), &cfg, 1, 2, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	st := s.Stats()
	if st.Tokenizes < 40 || st.ThreadWaits != 0 || st.MaxOpenConns > 2 {
		t.Errorf("calibration: %d /tokenize, %d thread waits, %d connections at once; want every prompt counted, over at most the 2 slots' connections, none waiting",
			st.Tokenizes, st.ThreadWaits, st.MaxOpenConns)
	}
	call, err := w.backend.Prepare("first", w.ds.Request(0))
	if err != nil {
		t.Fatal(err)
	}
	rec := &runlog.Record{}
	call(t.Context(), rec)
	if !rec.OK() || rec.ConnectNs == 0 || s.Stats().Conns != st.Conns+1 {
		t.Errorf("first request after calibration: %s, connect %d ns, %d new connections; want it on a new connection (none kept from calibration)",
			rec.ErrorClass, rec.ConnectNs, s.Stats().Conns-st.Conns)
	}
}

// A calibrated run against llama-server keeps all its slots busy: no
// connection waits for an HTTP thread held by an idle connection (a wait
// of the server's 5 s keep-alive; a busy host may delay the server's
// reaping of a closed one a little, which is not that), every slot runs,
// and no measured request pays a connect (the connections were warmed
// first).
func TestCalibratedRunUsesEverySlot(t *testing.T) {
	s, err := llamafake.Start(llamafake.Config{Slots: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := Run(t.Context(), llamaConfig(t, s.URL, 40, 4))
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.MaxThreadWait >= 2*time.Second || st.MaxBusy != 4 || st.SlotWaits != 0 {
		t.Errorf("server saw %d thread waits (longest %v), at most %d slots busy, %d slot waits; want none held by an idle connection, 4, none",
			st.ThreadWaits, st.MaxThreadWait, st.MaxBusy, st.SlotWaits)
	}
	connected := 0
	for _, r := range res.Records {
		if !r.OK() {
			t.Fatalf("%s: %s %s", r.ID, r.ErrorClass, r.Error)
		}
		if r.ConnectNs > 0 {
			connected++
		}
	}
	if len(res.Records) != 40 || connected != 0 {
		t.Errorf("%d records, %d on new connections; want 40, none", len(res.Records), connected)
	}
}

// A /metrics that does not answer the first probe (llama-server's threads
// all busy) is probed again during the run and then scraped; the missed
// scrapes are counted and said.
func TestScrapeProbedAgain(t *testing.T) {
	defer func(d time.Duration) { probeWaitMetrics = d }(probeWaitMetrics)
	probeWaitMetrics = 50 * time.Millisecond
	s, err := llamafake.Start(llamafake.Config{Slots: 2, MetricsStall: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := llamaConfig(t, s.URL, 20, 2)
	cfg.Scrape = &ScrapeConfig{Auto: true, Interval: 20 * time.Millisecond}
	var notes []string
	var mu sync.Mutex
	cfg.Hooks.Note = func(s string) {
		mu.Lock()
		notes = append(notes, s)
		mu.Unlock()
	}
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "probing it again during the run") || !regexp.MustCompile(`server metrics "server": [1-9]\d* of \d+ scrapes missed`).MatchString(all) {
		t.Errorf("notes:\n%s\nwant the probe retried and the missed scrapes counted", all)
	}
	if st := s.Stats(); st.MetricsScrapes < 2 {
		t.Errorf("%d scrapes answered; want the server scraped after the probe was retried", st.MetricsScrapes)
	}
	if len(res.Server) == 0 {
		t.Errorf("no server series; want the retried scrapes in the result")
	}
}
