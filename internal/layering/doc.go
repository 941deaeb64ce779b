// Package layering has no code: its test enforces the dependency rules of
// goodput's layout (imports point downstream only, I/O at the edges, the
// simulator never reads the clock), so the architecture cannot rot quietly.
package layering
