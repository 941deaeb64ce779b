package jsonscan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// skipAll validates a whole document with the scanner.
func skipAll(data []byte) error {
	var p Scanner
	p.Reset(data)
	if err := p.Skip(); err != nil {
		return err
	}
	return p.End()
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`{}`, `[]`, `{"a":[1,2,{"b":null}],"c":"\u00e9\n"}`, ` 1 `, `-0.5e+3`, `"x"`, `true`,
		`{"a":}`, `[1,]`, `{"a" 1}`, `01`, `1.`, `-`, `"\x"`, "\"\x01\"", `"\u12"`, `nul`, `{"a":1}}`, ``, `[`,
		`{"a":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`,
	} {
		got, want := skipAll([]byte(doc)) == nil, json.Valid([]byte(doc))
		if got != want {
			t.Errorf("%.40q: scanner valid = %v, encoding/json = %v", doc, got, want)
		}
	}
}

func TestErrorsWrapErrMalformed(t *testing.T) {
	err := skipAll([]byte(`{"a":tru}`))
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v does not wrap ErrMalformed", err)
	}
	if !strings.Contains(err.Error(), "offset") {
		t.Errorf("error %q does not say where", err)
	}
}

func TestMembersStrIntCount(t *testing.T) {
	var p Scanner
	p.Reset([]byte(`{"s":"a\"b\u00e9","n":-42,"big":1e3,"c":7,"neg":-1,"o":{"x":1}}`))
	var s Span
	var n int64
	var nOK, bigOK bool
	var c, neg int
	obj, err := p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "s":
			s, _, err = p.Str()
		case "n":
			n, nOK, err = p.Int()
		case "big":
			_, bigOK, err = p.Int()
		case "c":
			c, err = p.Count(100)
		case "neg":
			neg, err = p.Count(100)
		default:
			err = p.Skip()
		}
		return err
	})
	if err != nil || !obj {
		t.Fatalf("Members = %v, %v", obj, err)
	}
	if got := string(p.Bytes(s)); got != "a\"bé" {
		t.Errorf("s = %q, want %q", got, "a\"bé")
	}
	if n != -42 || !nOK || bigOK || c != 7 || neg != 0 {
		t.Errorf("n=%d ok=%v big ok=%v c=%d neg=%d; want -42 true false 7 0", n, nOK, bigOK, c, neg)
	}
	if err := p.End(); err != nil {
		t.Error(err)
	}
}

func TestObjectRejectsOtherValues(t *testing.T) {
	for doc, want := range map[string]string{"": "empty payload", "[1]": "not a JSON object", "{": ""} {
		var p Scanner
		p.Reset([]byte(doc))
		err := p.Object()
		if want == "" {
			if err != nil {
				t.Errorf("%q: Object() = %v, want nil (it starts an object)", doc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: Object() = %v, want %q", doc, err, want)
		}
	}
}

// FuzzScanner checks the scanner against encoding/json: the same documents
// are valid, and a kept top-level string unescapes to the same text.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\u00e9",{"b":null}]}`, `"\ud83d\ude00"`, `"\ud800x"`, "\"\xff\"", `[1e400]`, `{"a":"b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := skipAll(data) == nil, json.Valid(data)
		if got != want {
			t.Fatalf("scanner valid = %v, encoding/json = %v", got, want)
		}
		var p Scanner
		p.Reset(data)
		if p.Peek() != '"' {
			return
		}
		s, ok, err := p.Str()
		if err != nil || !ok || p.End() != nil {
			return
		}
		var std string
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("scanner kept a string encoding/json rejects: %v", err)
		}
		if string(p.Bytes(s)) != std {
			t.Fatalf("unescaped %q, encoding/json %q", p.Bytes(s), std)
		}
	})
}

func TestIntValueAndMemberInt(t *testing.T) {
	var p Scanner
	p.Reset([]byte(`{"a":-3,"b":1.5,"d":{"x":7,"y":9},"e":"s","f":[1]}`))
	got := map[string]int{}
	_, err := p.Members(func(k []byte) (err error) {
		switch string(k) {
		case "d":
			got["d.y"], err = p.MemberInt("y")
		case "f":
			got["f.y"], err = p.MemberInt("y") // not an object: 0, skipped
		default:
			got[string(k)], err = p.IntValue()
		}
		return err
	})
	if err != nil || p.End() != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": -3, "b": 0, "d.y": 9, "e": 0, "f.y": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}

// Document reads one object's members and refuses what is not exactly one
// object.
func TestDocument(t *testing.T) {
	var p Scanner
	var keys []string
	err := p.Document([]byte(` {"a":1,"b":[2,3]} `), func(k []byte) error {
		keys = append(keys, string(k))
		return p.Skip()
	})
	if err != nil || strings.Join(keys, ",") != "a,b" {
		t.Fatalf("keys %q, err %v; want a,b and nil", keys, err)
	}
	for _, in := range []string{``, `[1]`, `"s"`, `{"a":1} x`, `{"a":}`} {
		err := p.Document([]byte(in), func([]byte) error { return p.Skip() })
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("Document(%q) = %v; want ErrMalformed", in, err)
		}
	}
	stop := errors.New("member's own error")
	if err := p.Document([]byte(`{"a":1}`), func([]byte) error { return stop }); err != stop {
		t.Errorf("member error = %v; want it passed through", err)
	}
}
