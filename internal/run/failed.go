package run

import (
	"fmt"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
)

// AllFailed is an error when not one measured request of any level
// succeeded, the first level's failures by class in it: the numbers
// summarised then describe failures, not the server. A result of no
// levels has not failed.
func (r *Result) AllFailed() error {
	if len(r.Levels) == 0 {
		return nil
	}
	for _, l := range r.Levels {
		if l.Summary.Completed > 0 {
			return nil
		}
	}
	s := &r.Levels[0].Summary
	if s.Failed == 0 {
		return nil
	}
	classes := make([]string, 0, len(s.Failures))
	for _, c := range runlog.ErrorClasses {
		if n := s.Failures[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, n))
		}
	}
	return fmt.Errorf("all %d requests failed (%s)", s.Failed, strings.Join(classes, ", "))
}
