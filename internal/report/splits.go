package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Splits compares one fleet colocated and split into prefill and decode
// pools each way asked (sim's --pd-ratios): each fleet's goodput at the
// rate given and its per-GPU goodput as DistServe defines it, the highest
// request rate per GPU at which Attainment of the requests meet the SLO.
type Splits struct {
	// Replicas is the fleet's size and TP each replica's tensor-parallel
	// GPUs: Replicas × TP GPUs.
	Replicas, TP int
	// SLO is the SLO the goodput counts (as stats.SLO writes it) and
	// Attainment the share of requests that must meet it.
	SLO        string
	Attainment float64
	// Rate is the request rate given (req/s), the search's top;
	// SearchedTo the search's resolution below it.
	Rate, SearchedTo float64
	// Fleets are the colocated fleet first, then each split.
	Fleets []SplitFleet
	// Best indexes the split of Fleets with the highest MaxRate (never
	// the colocated one), and Verdict says how it compares with it.
	Best    int
	Verdict SplitVerdict
}

// SplitFleet is one fleet's figures in Splits.
type SplitFleet struct {
	// Name is "colocated" or the split as P:D.
	Name string
	// Goodput (req/s) and Attainment (the share meeting the SLO) are at
	// Splits.Rate.
	Goodput, Attainment float64
	// TransferP50 is the KV transfer's P50 at Splits.Rate, ms; -1 without
	// a split.
	TransferP50 float64
	// MaxRate is the highest rate found meeting the SLO for
	// Splits.Attainment of the requests (req/s) and PerGPU that over the
	// GPUs; AtTop says the rate given already does (the true one may be
	// higher).
	MaxRate, PerGPU float64
	AtTop           bool
}

// SplitVerdict is how the best split compares with the colocated fleet.
type SplitVerdict int

// The verdicts: the best split's MaxRate above, below or equal to the
// colocated fleet's, or both at the top, where the search cannot tell.
const (
	SplitBeats SplitVerdict = iota
	SplitLoses
	SplitTies
	SplitUntold
)

// String is the verdict as the terminal says it.
func (v SplitVerdict) String() string {
	switch v {
	case SplitLoses:
		return "loses to"
	case SplitTies:
		return "ties"
	case SplitUntold:
		return "cannot be told from (both meet the SLO at the rate given: raise it)"
	}
	return "beats"
}

// SplitsTerminal writes the comparison: the fleet, the SLO and the rate,
// a row per fleet and the best split.
func SplitsTerminal(w io.Writer, s *Splits) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", center(" Prefill/decode splits ", '='))
	fmt.Fprintf(&b, "%-*s %d × TP %d = %d GPUs\n", labelWidth, "Replicas:", s.Replicas, s.TP, s.Replicas*s.TP)
	fmt.Fprintf(&b, "%-*s %s, for %.0f %% of requests\n", labelWidth, "SLO:", s.SLO, 100*s.Attainment)
	fmt.Fprintf(&b, "%-*s %g (searched below it to %g)\n", labelWidth, "Request rate (req/s):", s.Rate, s.SearchedTo)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Split\tGoodput at rate\tSLO met (%)\tMax rate (req/s)\tPer GPU\tKV transfer P50 (ms)")
	for _, f := range s.Fleets {
		tr := "-"
		if f.TransferP50 >= 0 {
			tr = strconv.FormatFloat(f.TransferP50, 'f', 3, 64)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%s%.3g\t%s%.3g\t%s\n", f.Name, f.Goodput, 100*f.Attainment, atLeast(f.AtTop), f.MaxRate, atLeast(f.AtTop), f.PerGPU, tr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Fleets) > 1 {
		best, c := s.Fleets[s.Best], s.Fleets[0]
		fmt.Fprintf(&b, "%-*s %s (%s%.3g req/s per GPU; %s colocated, %.3g)\n", labelWidth, "Best split:", best.Name, atLeast(best.AtTop), best.PerGPU, s.Verdict, c.PerGPU)
	}
	b.WriteString(strings.Repeat("=", width) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// atLeast marks a rate the search could only bound from below.
func atLeast(b bool) string {
	if b {
		return "≥ "
	}
	return ""
}

// SplitsJSON is the comparison for a JSON document: rates in req/s, the
// KV transfer P50 in ms (absent without a split).
func SplitsJSON(s *Splits) map[string]any {
	fleets := make([]map[string]any, 0, len(s.Fleets))
	for _, f := range s.Fleets {
		m := map[string]any{"name": f.Name, "goodput": f.Goodput, "slo_attainment": f.Attainment,
			"max_rate": f.MaxRate, "max_rate_per_gpu": f.PerGPU, "at_top": f.AtTop}
		if f.TransferP50 >= 0 {
			m["kv_transfer_p50_ms"] = f.TransferP50
		}
		fleets = append(fleets, m)
	}
	out := map[string]any{"replicas": s.Replicas, "tensor_parallel_size": s.TP, "gpus": s.Replicas * s.TP,
		"slo": s.SLO, "slo_attainment_target": s.Attainment, "request_rate": s.Rate, "searched_to": s.SearchedTo,
		"fleets": fleets}
	if len(s.Fleets) > 1 {
		out["best"] = s.Fleets[s.Best].Name
		out["verdict"] = [...]string{"beats", "loses", "ties", "untold"}[s.Verdict]
	}
	return out
}
