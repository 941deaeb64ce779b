package protocols

import "testing"

// Add puts p at the end of the table until the test ends, as a new
// protocol's one entry would be: the toy protocol's test.
func Add(t testing.TB, p Protocol) {
	old := table
	table = append(table[:len(table):len(table)], p)
	t.Cleanup(func() { table = old })
}
