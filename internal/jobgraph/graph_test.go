package jobgraph

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/setting"
)

// node is a test node read at line of "g.json".
func node(id string, line int, after ...string) Node {
	n := Node{ID: id, After: after, Source: Source{File: "g.json", Line: line}}
	if len(after) > 0 {
		n.From, n.Context = after[0], Fork
	}
	return n
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		want  string // "" for no error
	}{
		{"chain", []Node{node("a", 1), node("b", 2, "a"), node("c", 3, "b")}, ""},
		{"diamond", []Node{node("a", 1), node("b", 2, "a"), node("c", 3, "a"), node("d", 4, "b", "c")}, ""},
		{"forward reference", []Node{node("b", 1, "a"), node("a", 2)}, ""},
		{"duplicate id", []Node{node("a", 1), node("a", 7)},
			`g.json:7: job "j": request "a": duplicate id, first at g.json:1`},
		{"empty id", []Node{node("", 3)}, `g.json:3: job "j": request "": empty id`},
		{"unknown dependency", []Node{node("a", 1), node("b", 2, "a", "zz")},
			`g.json:2: job "j": request "b": waits for unknown request "zz"`},
		{"self loop", []Node{node("a", 4, "a")}, `g.json:4: job "j": request "a": dependency cycle: waits for itself`},
		{"cycle", []Node{node("r", 1), node("a", 2, "c"), node("b", 3, "a"), node("c", 4, "b"), node("d", 5, "c")},
			`g.json:2: job "j": request "a": dependency cycle: "a" -> "b" -> "c" -> "a"`},
		{"negative gap", []Node{{ID: "a", Gap: -time.Second, Source: Source{"g.json", 9}}},
			`g.json:9: job "j": request "a": negative gap -1s`},
		{"negative tokens", []Node{{ID: "a", Out: -1, Source: Source{"g.json", 2}}},
			`g.json:2: job "j": request "a": negative token count (in 0, new 0, out -1, cached 0)`},
		{"unknown from", []Node{{ID: "a", From: "q", Context: Fork, Source: Source{"g.json", 2}}},
			`g.json:2: job "j": request "a": context from unknown request "q"`},
		{"from not an ancestor", []Node{node("a", 1), node("b", 2), {ID: "c", After: []string{"a"}, From: "b", Context: Fork, Source: Source{"g.json", 3}}},
			`g.json:3: job "j": request "c": context from "b", which it does not wait for, directly or not`},
		{"from an ancestor", []Node{node("a", 1), node("b", 2, "a"), {ID: "c", After: []string{"b"}, From: "a", Context: Fork}}, ""},
		{"unknown context", []Node{{ID: "a", Context: 7, Source: Source{"g.json", 1}}}, `g.json:1: job "j": request "a": unknown context 7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := Job{ID: "j", Nodes: tt.nodes}
			err := j.Check()
			got := ""
			if err != nil {
				got = err.Error()
				var fe *setting.FileError
				if !errors.As(err, &fe) {
					t.Errorf("Check() = %T; want a *setting.FileError", err)
				}
			}
			if got != tt.want {
				t.Errorf("Check() = %q; want %q", got, tt.want)
			}
			if strings.Contains(tt.name, "cycle") && !errors.Is(err, ErrCycle) {
				t.Errorf("Check() = %v; want it to wrap ErrCycle", err)
			}
		})
	}
}

func TestOrderKeepsListedOrder(t *testing.T) {
	j := Job{ID: "j", Nodes: []Node{node("b", 1, "a"), node("x", 2), node("a", 3), node("c", 4, "b", "x")}}
	if err := j.Check(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range j.Order() {
		got = append(got, j.Nodes[x].ID)
	}
	if want := "x a b c"; strings.Join(got, " ") != want {
		t.Errorf("Order() = %v; want %s", got, want)
	}
}

func TestContextString(t *testing.T) {
	for c, want := range map[Context]string{Spawn: "spawn", Fork: "fork", Last: "last", 9: "context(9)"} {
		if got := c.String(); got != want {
			t.Errorf("Context(%d).String() = %q; want %q", c, got, want)
		}
	}
}
