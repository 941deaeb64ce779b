package fit

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/goodput/goodput/internal/sim/costmodel"
)

// Profile renders res.GPU as a GPU profile file (a one-entry YAML list,
// as costmodel.LookupGPU loads from a .yaml path), each fitted parameter
// commented with its estimate and standard error, or as kept from the
// profile named base.
func Profile(res *Result, base string) ([]byte, error) {
	g := res.GPU
	g.Aliases = nil // the fitted machine is not the base's aliases
	s := &g.Sustained
	s.BF16TFLOPS, s.FP8TFLOPS, s.BandwidthGBs = sig(s.BF16TFLOPS), sig(s.FP8TFLOPS), sig(s.BandwidthGBs)
	if e := g.Efficiency; e != nil {
		c := *e
		c.IterationUs, c.RequestUs = sig(c.IterationUs), sig(c.RequestUs)
		g.Efficiency = &c
	}
	var doc yaml.Node
	if err := doc.Encode([]costmodel.GPU{g}); err != nil {
		return nil, err
	}
	comments := map[Param]string{}
	for _, e := range res.Estimates {
		if e.Identified {
			comments[e.Param] = fmt.Sprintf("fitted: %s ± %.1f %% (one standard error); base %s", num(e.Value), 100*e.RelErr, num(e.Base))
		} else {
			comments[e.Param] = fmt.Sprintf("not identified: kept from %s (%s)", base, e.Why)
		}
	}
	if len(doc.Content) == 1 {
		entry := doc.Content[0]
		for p, c := range comments {
			section, key, _ := strings.Cut(string(p), ".")
			if v := lookup(lookup(entry, section), key); v != nil {
				v.LineComment = c
			}
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# GPU profile fitted by goodput sim fit from %s's.\n", base)
	if res.RMSRelErr > 0 {
		fmt.Fprintf(&b, "# %d observations; the fit's RMS relative error %.1f %%.\n", len(res.Observations), 100*res.RMSRelErr)
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// lookup returns the value node of key in mapping node n, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// sig rounds x to five significant figures, so the file reads cleanly.
func sig(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, 4-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// num formats a parameter value to four significant figures.
func num(x float64) string { return fmt.Sprintf("%.4g", x) }
