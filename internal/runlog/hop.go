package runlog

import "strconv"

// HopTiming is what goodput proxy saw of one answer on its way through:
// when the upstream's first byte and first token reached the proxy, and
// when the proxy had delivered them downstream (written and flushed to its
// client), ns from the run start like every time in a Record. A proxy
// placed before and after a gateway, or one answer's upstream and delivery
// times, say what a hop adds. Zero fields were not seen (no token).
type HopTiming struct {
	UpstreamFirstByteNs   int64 `json:"upstream_first_byte_ns"`
	UpstreamFirstTokenNs  int64 `json:"upstream_first_token_ns"`
	DeliveredFirstByteNs  int64 `json:"delivered_first_byte_ns"`
	DeliveredFirstTokenNs int64 `json:"delivered_first_token_ns"`
}

// appendHop encodes h as the record's "hop" object.
func appendHop(dst []byte, h *HopTiming) []byte {
	dst = append(dst, `,"hop":{"upstream_first_byte_ns":`...)
	dst = strconv.AppendInt(dst, h.UpstreamFirstByteNs, 10)
	dst = append(dst, `,"upstream_first_token_ns":`...)
	dst = strconv.AppendInt(dst, h.UpstreamFirstTokenNs, 10)
	dst = append(dst, `,"delivered_first_byte_ns":`...)
	dst = strconv.AppendInt(dst, h.DeliveredFirstByteNs, 10)
	dst = append(dst, `,"delivered_first_token_ns":`...)
	dst = strconv.AppendInt(dst, h.DeliveredFirstTokenNs, 10)
	return append(dst, '}')
}
