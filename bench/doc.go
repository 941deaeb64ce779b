// Package bench holds goodput's end-to-end speed benchmarks: the measuring
// client against in-process loopback servers (chunk throughput, thousands
// of concurrent streams, timing accuracy under load, open-loop schedule
// keeping, memory per finished request). It has no code of its own; the
// figures are kept in docs/performance.md.
//
//	go test -run '^$' -bench . -benchtime 1x ./bench
package bench
