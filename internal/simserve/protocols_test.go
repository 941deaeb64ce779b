package simserve

import (
	"testing"

	"github.com/goodput/goodput/internal/wire/protocols"
)

// TestEveryProtocolServed: the simulator stands in for any server, so it
// speaks every protocol of the table (and names none the table lacks).
func TestEveryProtocolServed(t *testing.T) {
	inTable := map[string]bool{}
	for _, p := range protocols.All() {
		inTable[p.Name()] = true
		if _, ok := serverSides[p.Name()]; !ok {
			t.Errorf("protocol %s has no server side in serverSides", p.Name())
		}
	}
	for name := range serverSides {
		if !inTable[name] {
			t.Errorf("serverSides[%q] is no protocol of the table", name)
		}
	}
}
