package runlog

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Scrape is one scrape of a server's metrics taken while the run measured
// it: a records-file line {"scrape":{...}} between the records. The parsed
// sample is kept in servermetrics' JSON form, which runlog carries without
// reading, so the data model does not depend on any server's vocabulary.
type Scrape struct {
	// Target names the endpoint ("server", "dcgm", a replica's name).
	Target string `json:"target"`
	// At is when the body had been read (or the scrape failed), ns on the
	// run's clock; LatencyNs how long the scrape took.
	At        int64 `json:"at_ns"`
	LatencyNs int64 `json:"latency_ns,omitempty"`
	// Skipped counts the scrape times just before this one at which no
	// scrape started (the one before was still running): gaps.
	Skipped int `json:"skipped,omitempty"`
	// Error is why this scrape gave no sample ("" when it did).
	Error string `json:"error,omitempty"`
	// Sample is the parsed metrics; absent with Error.
	Sample json.RawMessage `json:"sample,omitempty"`
}

type scrapeLine struct {
	Scrape *Scrape `json:"scrape"`
}

// WriteScrape appends a scrape line.
func (w *Writer) WriteScrape(s *Scrape) error {
	b, err := json.Marshal(scrapeLine{Scrape: s})
	if err != nil {
		return fmt.Errorf("encode scrape line: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = append(append(w.buf[:0], b...), '\n')
	_, w.err = w.w.Write(w.buf)
	return w.err
}

// parseScrape decodes a scrape line.
func parseScrape(line []byte) (*Scrape, error) {
	var sl scrapeLine
	if err := json.Unmarshal(line, &sl); err != nil {
		return nil, fmt.Errorf("bad scrape line: %v", err)
	}
	s := sl.Scrape
	switch {
	case s == nil:
		return nil, errors.New("bad scrape line: no scrape object")
	case s.Target == "":
		return nil, errors.New("bad scrape line: no target")
	case s.At < -MaxTimeNs || s.At > MaxTimeNs:
		return nil, fmt.Errorf("bad scrape line: at_ns %d out of range", s.At)
	case s.LatencyNs < 0 || s.LatencyNs > MaxTimeNs || s.Skipped < 0:
		return nil, errors.New("bad scrape line: negative or absurd latency_ns or skipped")
	}
	return s, nil
}

// MergeScrapes puts the scrapes of files on the clock Merge puts their
// records on (the same shift per file). The second and later files' targets
// are named "<target>#<n>", so that two shards' servers, or two runs of one,
// never mix their counters into one series.
func MergeScrapes(files []RecordsFile) ([]Scrape, error) {
	if len(files) == 1 {
		return files[0].Scrapes, nil
	}
	shifts, _, _, err := placeRuns(files)
	if err != nil {
		return nil, err
	}
	var out []Scrape
	for i, f := range files {
		for _, s := range f.Scrapes {
			s.At += shifts[i]
			if i > 0 {
				s.Target = fmt.Sprintf("%s#%d", s.Target, i+1)
			}
			out = append(out, s)
		}
	}
	return out, nil
}
