package stats_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/stats"
)

const msec = time.Millisecond

func TestPresetNames(t *testing.T) {
	want := []string{"chat", "voice", "code-completion", "batch", "agent"}
	if got := stats.PresetNames(); !slices.Equal(got, want) {
		t.Errorf("PresetNames() = %q; want %q", got, want)
	}
	var fromPresets []string
	for _, p := range stats.Presets() {
		fromPresets = append(fromPresets, p.Name)
	}
	if !slices.Equal(fromPresets, want) {
		t.Errorf("Presets() names = %q; want %q", fromPresets, want)
	}
}

// TestPresetsRoundTrip checks that every preset's constraints print in the
// --goodput and --session-goodput syntax and parse back to themselves.
func TestPresetsRoundTrip(t *testing.T) {
	for _, p := range stats.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			req, err := stats.ParseSLO(p.Request.String())
			if err != nil {
				t.Fatalf("ParseSLO(%q): %v", p.Request.String(), err)
			}
			if req != p.Request {
				t.Errorf("ParseSLO(%q) = %+v; want %+v", p.Request.String(), req, p.Request)
			}
			sess, err := stats.ParseSessionSLO(p.Session.String())
			if err != nil {
				t.Fatalf("ParseSessionSLO(%q): %v", p.Session.String(), err)
			}
			if sess != p.Session {
				t.Errorf("ParseSessionSLO(%q) = %+v; want %+v", p.Session.String(), sess, p.Session)
			}
		})
	}
}

// TestPresetsDocumented checks that every preset says what it is for and
// where its numbers come from: every preset but batch sets a constraint,
// batch sets none, and every source has a claim, a title and an https URL.
func TestPresetsDocumented(t *testing.T) {
	for _, p := range stats.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			if p.Name != strings.ToLower(p.Name) || strings.ContainsAny(p.Name, " \t") {
				t.Errorf("name %q: want lower case, no spaces", p.Name)
			}
			if p.Product == "" || p.Summary == "" {
				t.Errorf("product %q, summary %q; want both", p.Product, p.Summary)
			}
			if p.Name == "batch" {
				if !p.Request.IsZero() || !p.Session.IsZero() {
					t.Errorf("batch = %q / %q; want no constraint", p.Request, p.Session)
				}
			} else if p.Request.IsZero() && p.Session.IsZero() {
				t.Errorf("no constraint; want at least one")
			}
			if len(p.Sources) == 0 {
				t.Errorf("no source; want at least one")
			}
			for i, s := range p.Sources {
				if s.Claim == "" || s.Title == "" || !strings.HasPrefix(s.URL, "https://") {
					t.Errorf("source %d = %+v; want a claim, a title and an https URL", i, s)
				}
			}
			for i, d := range p.Defaults {
				if d == "" {
					t.Errorf("default %d is empty", i)
				}
			}
		})
	}
}

func TestPresetValues(t *testing.T) {
	tests := []struct {
		name, req, sess string
	}{
		{"chat", "ttft:450 tpot:100", "ttp:2000 turn_ttft_p95:450"},
		{"voice", "tpot:200 ttp:200", "ttp:1000 turn_ttft_p95:200"},
		{"code-completion", "ttft:125 e2el:1000", ""},
		{"batch", "", ""},
		{"agent", "ttft:2000 tpot:80", "ttp:60000 turn_ttft_p95:2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := stats.LookupPreset(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Request.String(); got != tt.req {
				t.Errorf("Request = %q; want %q", got, tt.req)
			}
			if got := p.Session.String(); got != tt.sess {
				t.Errorf("Session = %q; want %q", got, tt.sess)
			}
		})
	}
}

func TestLookupPreset(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"exact", "chat", "chat"},
		{"upper case", "CHAT", "chat"},
		{"mixed case", "Code-Completion", "code-completion"},
		{"surrounding space", " voice\t", "voice"},
		{"batch", "batch", "batch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := stats.LookupPreset(tt.in)
			if err != nil {
				t.Fatalf("LookupPreset(%q): %v", tt.in, err)
			}
			if p.Name != tt.want {
				t.Errorf("LookupPreset(%q).Name = %q; want %q", tt.in, p.Name, tt.want)
			}
		})
	}
}

func TestLookupPresetUnknown(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unknown", "nope", `unknown SLO preset "nope" (known: chat, voice, code-completion, batch, agent)`},
		{"empty", "", `unknown SLO preset "" (known: chat, voice, code-completion, batch, agent)`},
		{"underscore", "code_completion", `unknown SLO preset "code_completion" (known: chat, voice, code-completion, batch, agent)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := stats.LookupPreset(tt.in)
			if err == nil {
				t.Fatalf("LookupPreset(%q) = %+v; want an error", tt.in, p)
			}
			if !errors.Is(err, stats.ErrUnknownPreset) {
				t.Errorf("LookupPreset(%q) error %v does not wrap ErrUnknownPreset", tt.in, err)
			}
			if err.Error() != tt.want {
				t.Errorf("LookupPreset(%q) error = %q; want %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestPresetsAreCopies checks that a caller changing what it got does not
// change the table.
func TestPresetsAreCopies(t *testing.T) {
	ps := stats.Presets()
	ps[0].Request.TTFT = time.Hour
	ps[0].Sources[0].URL = "changed"
	ps[0].Defaults[0] = "changed"
	p, _ := stats.LookupPreset(ps[0].Name)
	p.Sources[0].Claim = "changed"
	again, _ := stats.LookupPreset(ps[0].Name)
	if again.Request.TTFT == time.Hour || again.Sources[0].URL == "changed" ||
		again.Sources[0].Claim == "changed" || again.Defaults[0] == "changed" {
		t.Errorf("the preset table changed through a returned copy: %+v", again)
	}
}

func TestPresetMerge(t *testing.T) {
	p := stats.Preset{
		Name:    "test",
		Request: stats.SLO{TTFT: 450 * msec, TPOT: 100 * msec},
		Session: stats.SessionSLO{TTP: 2000 * msec, TurnTTFTP95: 450 * msec},
	}
	tests := []struct {
		name     string
		req      stats.SLO
		sess     stats.SessionSLO
		wantReq  stats.SLO
		wantSess stats.SessionSLO
	}{
		{
			name:     "no explicit constraint keeps the preset",
			wantReq:  stats.SLO{TTFT: 450 * msec, TPOT: 100 * msec},
			wantSess: stats.SessionSLO{TTP: 2000 * msec, TurnTTFTP95: 450 * msec},
		},
		{
			name:     "explicit ttft overrides only ttft",
			req:      stats.SLO{TTFT: 300 * msec},
			wantReq:  stats.SLO{TTFT: 300 * msec, TPOT: 100 * msec},
			wantSess: stats.SessionSLO{TTP: 2000 * msec, TurnTTFTP95: 450 * msec},
		},
		{
			name:     "explicit tpot overrides only tpot",
			req:      stats.SLO{TPOT: 40 * msec},
			wantReq:  stats.SLO{TTFT: 450 * msec, TPOT: 40 * msec},
			wantSess: stats.SessionSLO{TTP: 2000 * msec, TurnTTFTP95: 450 * msec},
		},
		{
			name:     "explicit e2el and ttp are added",
			req:      stats.SLO{E2E: 5000 * msec, TTP: 1000 * msec},
			wantReq:  stats.SLO{TTFT: 450 * msec, TPOT: 100 * msec, E2E: 5000 * msec, TTP: 1000 * msec},
			wantSess: stats.SessionSLO{TTP: 2000 * msec, TurnTTFTP95: 450 * msec},
		},
		{
			name:     "a looser explicit limit wins too",
			req:      stats.SLO{TTFT: 10000 * msec},
			wantReq:  stats.SLO{TTFT: 10000 * msec, TPOT: 100 * msec},
			wantSess: stats.SessionSLO{TTP: 2000 * msec, TurnTTFTP95: 450 * msec},
		},
		{
			name:     "explicit session ttp overrides only session ttp",
			sess:     stats.SessionSLO{TTP: 5000 * msec},
			wantReq:  stats.SLO{TTFT: 450 * msec, TPOT: 100 * msec},
			wantSess: stats.SessionSLO{TTP: 5000 * msec, TurnTTFTP95: 450 * msec},
		},
		{
			name:     "explicit session turn_ttft_p95 overrides only it",
			sess:     stats.SessionSLO{TurnTTFTP95: 800 * msec},
			wantReq:  stats.SLO{TTFT: 450 * msec, TPOT: 100 * msec},
			wantSess: stats.SessionSLO{TTP: 2000 * msec, TurnTTFTP95: 800 * msec},
		},
		{
			name:     "explicit session duration is added",
			sess:     stats.SessionSLO{Duration: 60000 * msec},
			wantReq:  stats.SLO{TTFT: 450 * msec, TPOT: 100 * msec},
			wantSess: stats.SessionSLO{TTP: 2000 * msec, TurnTTFTP95: 450 * msec, Duration: 60000 * msec},
		},
		{
			name:     "every field explicit replaces the preset",
			req:      stats.SLO{TTFT: 1 * msec, TPOT: 2 * msec, E2E: 3 * msec, TTP: 4 * msec},
			sess:     stats.SessionSLO{TTP: 5 * msec, TurnTTFTP95: 6 * msec, Duration: 7 * msec},
			wantReq:  stats.SLO{TTFT: 1 * msec, TPOT: 2 * msec, E2E: 3 * msec, TTP: 4 * msec},
			wantSess: stats.SessionSLO{TTP: 5 * msec, TurnTTFTP95: 6 * msec, Duration: 7 * msec},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotReq, gotSess := p.Merge(tt.req, tt.sess)
			if diff := cmp.Diff(tt.wantReq, gotReq); diff != "" {
				t.Errorf("Merge(%q, %q) request (-want +got):\n%s", tt.req, tt.sess, diff)
			}
			if diff := cmp.Diff(tt.wantSess, gotSess); diff != "" {
				t.Errorf("Merge(%q, %q) session (-want +got):\n%s", tt.req, tt.sess, diff)
			}
		})
	}
}

// TestBatchMergeIsExplicit checks that batch, with no constraint, merges to
// exactly the explicit constraints.
func TestBatchMergeIsExplicit(t *testing.T) {
	p, err := stats.LookupPreset("batch")
	if err != nil {
		t.Fatal(err)
	}
	req, sess := stats.SLO{E2E: 60000 * msec}, stats.SessionSLO{Duration: 600000 * msec}
	gotReq, gotSess := p.Merge(req, sess)
	if gotReq != req || gotSess != sess {
		t.Errorf("batch.Merge(%q, %q) = %q, %q; want them unchanged", req, sess, gotReq, gotSess)
	}
}

func FuzzLookupPreset(f *testing.F) {
	for _, s := range []string{"chat", " Voice ", "nope", "", "AGENT\n", "code-completion"} {
		f.Add(s)
	}
	names := stats.PresetNames()
	f.Fuzz(func(t *testing.T, name string) {
		p, err := stats.LookupPreset(name)
		want := slices.Contains(names, strings.ToLower(strings.TrimSpace(name)))
		if (err == nil) != want {
			t.Fatalf("LookupPreset(%q) error = %v; want found = %v", name, err, want)
		}
		if err == nil && p.Name != strings.ToLower(strings.TrimSpace(name)) {
			t.Fatalf("LookupPreset(%q).Name = %q", name, p.Name)
		}
		if err != nil && !errors.Is(err, stats.ErrUnknownPreset) {
			t.Fatalf("LookupPreset(%q) error %v does not wrap ErrUnknownPreset", name, err)
		}
	})
}

// A preset gives the constraints; explicit --goodput / --session-goodput
// constraints override it field by field.
func ExamplePreset_Merge() {
	p, err := stats.LookupPreset("chat")
	if err != nil {
		fmt.Println(err)
		return
	}
	explicit, _ := stats.ParseSLO("ttft:300")
	req, sess := p.Merge(explicit, stats.SessionSLO{})
	fmt.Printf("preset:  %s | %s\n", p.Request, p.Session)
	fmt.Printf("merged:  %s | %s\n", req, sess)
	// Output:
	// preset:  ttft:450 tpot:100 | ttp:2000 turn_ttft_p95:450
	// merged:  ttft:300 tpot:100 | ttp:2000 turn_ttft_p95:450
}

// TestReadingSpeedOneFigure: the reading speed the findings and compare
// assume is the one the chat preset cites from its study.
func TestReadingSpeedOneFigure(t *testing.T) {
	chat, err := stats.LookupPreset("chat")
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(stats.ReadingSpeedMs) + " ms/token"
	cited := false
	for _, s := range chat.Sources {
		cited = cited || (s.URL == stats.ReadingSource.URL && strings.Contains(s.Claim, want))
	}
	if !cited {
		t.Errorf("chat preset's sources do not cite %q from %s", want, stats.ReadingSource.Title)
	}
	if got := stats.ReadingSpeedCite(stats.ReadingSpeedMs); got != "194 ms/token, about 5.2 tokens/s: adults' 238 words/min, Brysbaert 2019" {
		t.Errorf("ReadingSpeedCite(%d) = %q; want the figure and its source", stats.ReadingSpeedMs, got)
	}
	if got := stats.ReadingSpeedCite(40); got != "40 ms/token, about 25.0 tokens/s" {
		t.Errorf("ReadingSpeedCite(40) = %q; want no source for a figure of the user's", got)
	}
}
