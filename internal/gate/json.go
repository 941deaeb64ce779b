package gate

import "encoding/json"

// CheckJSON is Check on a result JSON document: the conditions that hold
// on it, as Check words them; an error when doc is not a JSON object.
func (g Gate) CheckJSON(doc []byte) ([]string, error) {
	if len(g.Conds) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	return g.Check(m), nil
}

// JudgeJSON is Judge on a result JSON document; an error when doc is not
// a JSON object.
func (g Gate) JudgeJSON(doc []byte) (Verdict, error) {
	if len(g.Conds) == 0 {
		return Verdict{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return Verdict{}, err
	}
	return g.Judge(m), nil
}
