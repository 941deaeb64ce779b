package runspec

import (
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/workload"
)

// WorkloadSpec is how a wall-clock run sends its dataset, as a user
// gives it, besides the dataset's own options.
type WorkloadSpec struct {
	// Calibrate is auto ("" too) or off: fit prompt lengths to the
	// server's token counts.
	Calibrate string
	// CustomOutputLen is the output tokens asked of every request of a
	// custom dataset; 0 or -1 keeps the file's.
	CustomOutputLen int
}

// Workload is the workload of the dataset options o.
func (s *WorkloadSpec) Workload(o workload.Options) (run.Workload, error) {
	if s.CustomOutputLen < -1 {
		return run.Workload{}, setting.Errorf("CustomOutputLen", strconv.Itoa(s.CustomOutputLen), "want a number of tokens, or 0 or -1 for the file's")
	}
	cal := strings.ToLower(s.Calibrate)
	if cal != "auto" && cal != "" && cal != "off" {
		return run.Workload{}, setting.Errorf("Calibrate", strconv.Quote(s.Calibrate), "want auto or off")
	}
	return run.Workload{Options: o, Calibrate: cal != "off", OutputTokens: max(s.CustomOutputLen, 0)}, nil
}
