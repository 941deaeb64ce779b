package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/stats"
)

func init() { RegisterSection("jobs", JobsTerminal, JobsJSON, exampleJobs) }

// jobRowsShown is how many jobs the terminal lists one by one; the result
// JSON has them all.
const jobRowsShown = 20

// exampleJobs is a jobs block with every figure known.
func exampleJobs(o breakdown.Options) *breakdown.Jobs {
	ps := o.Percentiles
	if ps == nil {
		ps = stats.DefaultPercentiles
	}
	d := breakdown.JobDist{Mean: 1, P: make([]float64, len(ps))}
	return &breakdown.Jobs{Completed: 1, Requests: 1, Percentiles: ps, E2E: d, Model: d, Waiting: d, PromptTokens: 1, HasImplied: true,
		Rows: []breakdown.JobRow{{ID: "j", Requests: 1, Whole: true, Critical: []string{"0"}, PromptTokens: 1, HasImplied: true}}}
}

// JobsTerminal writes the Agent jobs block: the jobs' times across jobs
// (mean and percentiles of end-to-end, model and waiting time along the
// critical path), the prefix cache measured against the trace, then one
// line per job (the first jobRowsShown) with its critical path; nothing
// for nil.
func JobsTerminal(w io.Writer, j *breakdown.Jobs) error {
	if j == nil {
		return nil
	}
	t := &term{}
	t.header(" Agent jobs ", '=')
	t.line("Jobs completed, failed:", fmt.Sprintf("%d, %d (%d requests)", j.Completed, j.Failed, j.Requests))
	cache := fmt.Sprintf("%.2f %% measured", 100*j.MeasuredShare())
	if j.HasImplied {
		cache += fmt.Sprintf(", %.2f %% implied by the trace's hash ids", 100*j.ImpliedShare())
	}
	t.line("Prefix cache hits:", cache)
	tw := tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', 0)
	head := "Job time (ms)\tMean"
	for _, p := range j.Percentiles {
		head += "\tP" + stats.PercentileName(p)
	}
	fmt.Fprintln(tw, head)
	for _, r := range []struct {
		name string
		d    breakdown.JobDist
	}{{"End-to-end", j.E2E}, {"Model (critical path)", j.Model}, {"Waiting (gaps)", j.Waiting}} {
		if j.Completed == 0 {
			continue
		}
		line := r.name + "\t" + f2(r.d.Mean)
		for _, v := range r.d.P {
			line += "\t" + f2(v)
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush() // a bytes.Buffer's writes do not fail
	tw = tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Job\tReqs\tE2E ms\tModel ms\tWait ms\tCache %\tImplied %\tCritical path")
	for i, r := range j.Rows {
		if i == jobRowsShown {
			fmt.Fprintf(tw, "(%d more jobs in the result JSON)\n", len(j.Rows)-i)
			break
		}
		e2e, model, wait, path := "-", "-", "-", "failed"
		if r.Whole {
			e2e, model, wait, path = f2(r.E2EMs), f2(r.ModelMs), f2(r.WaitingMs), strings.Join(r.Critical, " > ")
		}
		implied := "-"
		if r.HasImplied {
			implied = f2(100 * r.ImpliedShare())
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Requests, e2e, model, wait, f2(100*r.MeasuredShare()), implied, path)
	}
	_ = tw.Flush()
	t.b.WriteString(center("", '=') + "\n")
	_, err := w.Write(t.b.Bytes())
	return err
}

// JobsJSON is the block for the result JSON: the counts, the times across
// jobs as {mean, pNN} objects in ms, the cache shares (percent) and every
// job; nil for nil. The implied share is left out when the trace had no
// hash ids.
func JobsJSON(j *breakdown.Jobs) map[string]any {
	if j == nil {
		return nil
	}
	dist := func(d breakdown.JobDist) map[string]any {
		m := map[string]any{"mean": d.Mean}
		for k, p := range j.Percentiles {
			v := 0.0
			if k < len(d.P) {
				v = d.P[k]
			}
			m["p"+stats.PercentileName(p)] = v
		}
		return m
	}
	rows := make([]map[string]any, len(j.Rows))
	for i, r := range j.Rows {
		row := map[string]any{"id": r.ID, "requests": r.Requests, "failed": r.Failed, "completed": r.Whole,
			"prompt_tokens": r.PromptTokens, "cached_tokens": r.CachedTokens, "cache_hit_pct": 100 * r.MeasuredShare()}
		if r.Whole {
			row["e2e_ms"], row["model_ms"], row["waiting_ms"], row["critical_path"] = r.E2EMs, r.ModelMs, r.WaitingMs, r.Critical
		}
		if r.HasImplied {
			row["implied_cached_tokens"], row["implied_cache_hit_pct"] = r.ImpliedTokens, 100*r.ImpliedShare()
		}
		rows[i] = row
	}
	m := map[string]any{"completed": j.Completed, "failed": j.Failed, "requests": j.Requests,
		"e2e_ms": dist(j.E2E), "model_ms": dist(j.Model), "waiting_ms": dist(j.Waiting),
		"prompt_tokens": j.PromptTokens, "cached_tokens": j.CachedTokens, "cache_hit_pct": 100 * j.MeasuredShare(), "per_job": rows}
	if j.HasImplied {
		m["implied_cached_tokens"], m["implied_cache_hit_pct"] = j.ImpliedTokens, 100*j.ImpliedShare()
	}
	return m
}
