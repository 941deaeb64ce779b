package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeExample is how TestReadmeExamples runs one command of README.md
// and what its output must show: what the README's text says of it.
type readmeExample struct {
	// extra arguments appended to shrink the run (later flags win).
	shrink []string
	// want are patterns the output (stdout and stderr) must match.
	want []string
	// files the run must leave in its folder.
	files []string
	// skip, when set, says why this example is not run here and where it
	// is checked instead.
	skip string
}

// readmeExamples holds every goodput command of README.md's sh blocks,
// keyed by its text there (continuation lines joined). A new example with
// no entry fails the test, so each one that is added is checked.
var readmeExamples = map[string]readmeExample{
	"goodput bench": {
		shrink: []string{"--num-prompts", "20", "--quiet"},
		want:   []string{`benchmarking the embedded simulator \(simulated model=llama-3\.1-8b gpu=h100`, `Successful requests:\s+20\n`},
	},
	"goodput sim --dataset-name conversations --turns fixed:8 --shared-prefix-len 1024 --tool-share 0.3 --tool-latency uniform:100,800 --session-rate 2 --slo-preset agent": {
		shrink: []string{"--num-sessions", "6"},
		want:   []string{`Turns per session mean/max:\s+8\.00 / 8`, `Sessions meeting SLO`, `Session goodput \(sessions/s\):`},
	},
	"goodput bench --base-url http://127.0.0.1:8000 --backend openai-chat --request-rate 8 --burstiness 1 --num-prompts 500 --num-warmups 20 --random-input-len 2048 --random-output-len 256 --ignore-eos --goodput ttft:2000 tpot:50 --save-result --html report.html": {
		shrink: []string{"--num-prompts", "12", "--num-warmups", "2", "--random-output-len", "16", "--request-rate", "20", "--quiet"},
		want:   []string{`Successful requests:\s+12\n`, `Request goodput \(req/s\):`, `HTML report in report\.html`},
		files:  []string{"report.html"},
	},
	"goodput sweep --sim --request-rate 2,4,8,12,16,20,24 --goodput ttft:2000 tpot:50": {
		shrink: []string{"--num-prompts", "60", "--quiet"},
		want:   []string{`(?i)knee`, `(?i)goodput`},
	},
	"goodput sweep --base-url http://127.0.0.1:8000 --concurrency 1,8,16,32,64 --num-prompts 500": {
		shrink: []string{"--concurrency", "1,8", "--num-prompts", "8", "--random-output-len", "16", "--quiet"},
		want:   []string{`(?i)concurrency`},
	},
	"goodput sim --model qwen3-32b --gpu h200 --tp 2 --max-num-seqs 128 --request-rate 6 --num-prompts 5000": {
		shrink: []string{"--num-prompts", "100"},
		want:   []string{`(?i)qwen3-32b`, `h200`, `Successful requests:\s+100\n`},
	},
	"goodput serve --port 8000 --model llama-3.1-8b --gpu a100-80gb": {
		skip: "a server that runs until stopped: TestServe (sim_test.go) starts serve and reads its /v1/models",
	},
	"goodput serve --port 8000 --replicas 4 --router least-outstanding": {
		skip: "a server that runs until stopped: serve_replicas.txtar checks a served fleet and its per-engine /metrics",
	},
	"goodput sim --replicas 8 --router prefix-aware --dataset-name trace --dataset-path mooncake.jsonl": {
		skip: "needs a Mooncake trace: sim_cluster.txtar runs the prefix-aware router; TestMooncake* in workload read the real trace",
	},
	"goodput sim --pd-ratios 1:3,2:2,3:1 --random-input-len 4096 --random-output-len 64 --request-rate 40 --num-prompts 1000 --goodput ttft:1000 tpot:40": {
		shrink: []string{"--num-prompts", "200"},
		want:   []string{`1:3`, `2:2`, `3:1`},
	},
	"goodput sim --replicas 2 --autoscale p95-ttft:1s --autoscale-max 8 --autoscale-up-step 2 --provision-delay 30s --autoscale-cooldown 30s --request-rate 60 --duration 3m --timeout 30s --retries 2 --retry-backoff exponential:1s,30s,full": {
		skip: "the autoscale example is checked by its own test (TestReadmeAutoscaleExample)",
	},
	"goodput proxy --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8000 --metrics-listen 127.0.0.1:9464 --goodput ttft:2000 tpot:50": {
		skip: "a proxy that runs until stopped: proxy_test.go, and scripts/prometheus-check.sh with a real Prometheus",
	},
	"goodput report run.records.jsonl --goodput ttft:1000 --html run.html": {
		want:  []string{`Successful requests:`, `Request goodput \(req/s\):`},
		files: []string{"run.html"},
	},
	"goodput compare before.records.jsonl after.records.jsonl --goodput ttft:2000 tpot:50": {
		want: []string{`(?i)before\.records\.jsonl`, `(?i)after\.records\.jsonl`, `(?i)ttft`},
	},
}

// readmeCommands returns the goodput commands of README.md's sh blocks,
// continuation lines joined, comments dropped; "go run ./cmd/goodput" is
// "goodput".
func readmeCommands(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	in, cur := false, ""
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		case !in:
			continue
		}
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		cont := strings.HasSuffix(line, "\\")
		cur = strings.TrimSpace(cur + " " + strings.TrimSuffix(line, "\\"))
		if cont {
			continue
		}
		cur = strings.Join(strings.Fields(cur), " ")
		cur = strings.Replace(cur, "go run ./cmd/goodput", "goodput", 1)
		if strings.HasPrefix(cur, "goodput ") || cur == "goodput" {
			cmds = append(cmds, cur)
		}
		cur = ""
	}
	return cmds
}

// TestReadmeExamples runs each command of README.md (shrunk, and against
// a simulated server where it names one on 127.0.0.1:8000) and checks
// that its output shows what the README's text says it does.
func TestReadmeExamples(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found %d goodput commands in README.md; the extraction is broken", len(cmds))
	}
	seen := map[string]bool{}
	for _, c := range cmds {
		seen[c] = true
		if _, ok := readmeExamples[c]; !ok {
			t.Errorf("README.md example %q has no entry in readmeExamples: say what its output must show", c)
		}
	}
	for c := range readmeExamples {
		if !seen[c] {
			t.Errorf("readmeExamples has %q, which README.md no longer shows", c)
		}
	}
	if t.Failed() {
		return
	}
	url := startServe(t)
	dir := t.TempDir()
	// As a user runs them, in one folder: bench's --html is written
	// relative to the process's folder, not Env.Dir.
	t.Chdir(dir)
	// report and compare read records the README's text assumes exist.
	for _, name := range []string{"run", "before", "after"} {
		seed := map[string]string{"run": "1", "before": "1", "after": "2"}[name]
		if code, out := runIn(t, dir, "sim", "--num-prompts", "60", "--request-rate", "10", "--seed", seed, "--quiet", "--records", name+".records.jsonl"); code != ExitOK {
			t.Fatalf("making %s.records.jsonl: exit %d\n%s", name, code, out)
		}
	}
	for _, c := range cmds {
		ex := readmeExamples[c]
		t.Run(c, func(t *testing.T) {
			if ex.skip != "" {
				t.Skip(ex.skip)
			}
			args := append(strings.Fields(strings.ReplaceAll(c, "http://127.0.0.1:8000", url))[1:], ex.shrink...)
			code, out := runIn(t, dir, args...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s", code, out)
			}
			for _, w := range ex.want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, f := range ex.files {
				if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
					t.Errorf("no %s after the run: %v", f, err)
				}
			}
		})
	}
}

// runIn runs goodput with args in dir; it returns the exit code and
// stdout followed by stderr.
func runIn(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(t.Context(), args, Env{Stdout: &out, Stderr: &errb, Now: time.Now, Dir: dir,
		Getenv: func(string) string { return "" }})
	return code, out.String() + errb.String()
}

// startServe starts "goodput serve" on a free loopback port for the
// examples that name a server, and stops it when the test ends.
func startServe(t *testing.T) string {
	t.Helper()
	var errb syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"serve", "--port", "0"},
			Env{Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now})
	}()
	t.Cleanup(func() { cancel(); <-done })
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	// A minute is a sanity limit for a loaded machine, not a start-up claim.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if u := re.FindString(errb.String()); u != "" {
			if resp, err := http.Get(u + "/v1/models"); err == nil {
				resp.Body.Close()
				return u
			}
		}
	}
	t.Fatalf("serve announced no address: %q", errb.String())
	return ""
}
