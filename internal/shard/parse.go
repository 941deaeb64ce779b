package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parse parses I/N: shard I, counted from 0, of N (1 to MaxCount).
// The error says what is wrong with s; its caller names the setting.
func Parse(s string) (index, count int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, 0, errors.New("want I/N, shard I (from 0) of N, e.g. 0/4")
	}
	index, err1 := strconv.Atoi(strings.TrimSpace(a))
	count, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, errors.New("want I/N with whole numbers, e.g. 0/4")
	case count < 1 || count > MaxCount:
		return 0, 0, fmt.Errorf("want 1 to %d shards", MaxCount)
	case index < 0 || index >= count:
		return 0, 0, fmt.Errorf("the index counts from 0: want 0 to %d", count-1)
	}
	return index, count, nil
}

// ParseStartAt parses a synchronised start (run.Config.StartAt): an RFC 3339
// instant, fractional seconds allowed, with its zone (Z or ±hh:mm).
func ParseStartAt(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, errors.New("want an RFC 3339 instant with its zone, e.g. 2026-12-01T10:00:00Z")
	}
	return t, nil
}
