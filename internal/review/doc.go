// Package review holds the commands over saved runs: goodput report (a
// run's records files read back, merged onto one clock and judged again,
// with the settings given replacing the stored ones), goodput compare (run
// B judged against the baseline A, from records files or result JSON),
// goodput sim fit (an engine profile fitted to a server's records), and
// the comparison of prefill/decode splits of one fleet (runs in virtual
// time, judged by goodput per GPU). Reading runs back — records files,
// merged runs, one side of a comparison — lives here too.
//
// Each command is a spec (the user's settings, checked, each error a
// *setting.Error naming its field) and one function over Files, the
// files and streams the caller injects; nothing here reads the
// environment or the standard streams. The functions are not safe for
// concurrent use of one spec.
package review
