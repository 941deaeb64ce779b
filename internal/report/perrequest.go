package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"iter"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// PerRequestColumns are the columns of the per-request output, in order.
// Latencies are in milliseconds; an empty CSV cell (null in JSON Lines)
// means the metric does not exist for the request (no token, one token, a
// failure).
var PerRequestColumns = []string{
	"request_id", "level", "input_tokens", "output_tokens", "cached_tokens",
	"ttft_ms", "ttp_ms", "tpot_ms", "e2el_ms", "response_ms", "status", "error_class",
	"session_id", "turn", "tool_round",
}

// Records returns an iterator over recs by pointer, the form HTML and the
// per-request writers consume.
func Records(recs []runlog.Record) iter.Seq[*runlog.Record] {
	return func(yield func(*runlog.Record) bool) {
		for i := range recs {
			if !yield(&recs[i]) {
				return
			}
		}
	}
}

// msCell formats a duration as milliseconds with microsecond precision, or
// "" when it does not exist.
func msCell(d time.Duration, ok bool) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64)
}

// inputTokens is the prompt length a record was sent with: the server's
// count, else what the workload asked for.
func inputTokens(r *runlog.Record) int {
	if r.PromptTokens > 0 {
		return r.PromptTokens
	}
	return r.RequestedPromptTokens
}

// rowCells renders one record as PerRequestColumns cells.
func rowCells(r *runlog.Record) []string {
	return []string{
		r.ID,
		strconv.Itoa(r.Level),
		strconv.Itoa(inputTokens(r)),
		strconv.Itoa(r.OutputTokens()), // for a failure: what arrived before it
		strconv.Itoa(r.CachedTokens),
		msCell(r.TTFT()),
		msCell(r.TTP()),
		msCell(r.TPOT()),
		msCell(r.E2E()),
		msCell(r.ResponseTime()),
		strconv.Itoa(r.Status),
		string(r.ErrorClass),
		r.SessionID,
		sessionCell(r, r.Turn),
		sessionCell(r, r.ToolRound),
	}
}

// sessionCell is a session field of a record in a session; "" (null in
// JSONL) outside one.
func sessionCell(r *runlog.Record, v int) string {
	if r.SessionID == "" {
		return ""
	}
	return strconv.Itoa(v)
}

// WritePerRequestCSV writes a header and one CSV row per non-warm-up record
// (PerRequestColumns), in iteration order.
func WritePerRequestCSV(w io.Writer, recs iter.Seq[*runlog.Record]) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(PerRequestColumns); err != nil {
		return err
	}
	for r := range recs {
		if r.Warmup {
			continue
		}
		if err := cw.Write(rowCells(r)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WritePerRequestJSONL writes one JSON object per non-warm-up record with
// the PerRequestColumns keys in that order: numbers as numbers, metrics that
// do not exist as null, error_class "" for success.
func WritePerRequestJSONL(w io.Writer, recs iter.Seq[*runlog.Record]) error {
	var b bytes.Buffer
	for r := range recs {
		if r.Warmup {
			continue
		}
		b.Reset()
		cells := rowCells(r)
		b.WriteByte('{')
		for i, col := range PerRequestColumns {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:", col)
			v := cells[i]
			switch {
			case col == "session_id" && v == "":
				b.WriteString("null")
			case col == "request_id" || col == "error_class" || col == "session_id":
				if err := encode(&b, v); err != nil {
					return err
				}
			case v == "":
				b.WriteString("null")
			default:
				b.WriteString(v)
			}
		}
		b.WriteString("}\n")
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
