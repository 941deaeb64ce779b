package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/goodput/goodput/internal/sim/fit"
)

// FitTable writes each observation of a GPU-profile fit beside the base
// and fitted models' times, as comments of the profile's YAML.
func FitTable(w io.Writer, res *fit.Result) error {
	fmt.Fprintf(w, "\n# Observed vs modelled step times (fit RMS error %.1f %%)\n", 100*res.RMSRelErr)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "# kind\tbatch\tprompt\tcontext\trequests\tobserved ms\tbase ms\tfitted ms\terror")
	for i, ob := range res.Observations {
		ctx := "-"
		if ob.Kind == fit.Decode {
			ctx = fmt.Sprintf("%.0f", ob.Context)
		}
		fmt.Fprintf(tw, "# %s\t%d\t%.0f\t%s\t%d\t%.3f\t%.3f\t%.3f\t%+.1f %%\n", ob.Kind, ob.Batch, ob.Prompt, ctx, ob.Requests,
			ob.Seconds*1e3, res.BaseModelled[i]*1e3, res.Modelled[i]*1e3, 100*(res.Modelled[i]/ob.Seconds-1))
	}
	return tw.Flush()
}
