package cluster

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"go.yaml.in/yaml/v3"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
)

// ParseFile reads the cluster file at path and parses it (see Parse),
// naming it path in messages.
func ParseFile(path string, base sim.Config) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return Config{}, &setting.FileError{File: path, Err: err}
	}
	return Parse(data, path, base)
}

// Parse reads a cluster file: pools of replicas, each pool its own engine
// settings, behind one router. name is how messages call the file.
//
//	router: least-outstanding      # as --router spells it (default round-robin)
//	enable_expert_parallel: false  # the replicas are the ranks of one MoE deployment
//	pools:
//	  - name: big                  # default pool1, pool2, ...
//	    replicas: 2                # default 1
//	    gpu: h100-sxm
//	    model: llama-3.1-70b
//	    tensor_parallel_size: 4    # or tp
//	    max_num_seqs: 128
//	  - name: small
//	    replicas: 4
//	    gpu: l4
//
// A pool's engine keys are the engine flags' names without their dashes,
// with _ or - between words as vLLM's config files allow (PoolKeys lists
// them); a key a pool does not set is base's, the command line's engine
// flags. Replicas are numbered pool by pool, in the file's order. A YAML
// anchor and merge key (<<: *common) share settings between pools.
//
// Every pool is checked as the engine would check it (a model that does
// not fit its GPUs, an unknown GPU): any mistake is a *setting.FileError
// naming the file, the line, the pool and the key. Unknown keys are refused with
// the nearest known one suggested; the sections later builds read
// (autoscale, gateway, a pool's class) are refused as not supported in
// this build. Pools with a role (prefill, decode) split the cluster into
// a prefill and a decode pool (Config.Disagg), the prefill pools listed
// first, over the file's kv_link.
func Parse(data []byte, name string, base sim.Config) (Config, error) {
	p := &fileParser{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Config{}, setting.YAMLSyntaxError(p.file, err, data)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return Config{}, &setting.FileError{File: name, Err: errors.New("the file is empty: want a mapping with a list of pools")}
	}
	return p.config(doc.Content[0], base)
}

// Keys of a cluster file: the top level's, the pools' own (besides the
// engine's, PoolKeys) and those reserved for sections not built yet.
var (
	topKeys      = []string{"router", "enable_expert_parallel", "kv_link", "pools"}
	topReserved  = []string{"autoscale", "gateway"}
	poolOwnKeys  = []string{"name", "replicas", "role"}
	poolReserved = []string{"class"}
)

// poolKey is an engine setting a pool may set: its key and where it
// goes.
type poolKey struct {
	key string
	ptr func(*sim.Config) any
}

// poolKeys are the engine settings of a pool, as the engine flags name
// them with underscores for dashes.
var poolKeys = []poolKey{
	{"model", func(c *sim.Config) any { return &c.Model }},
	{"gpu", func(c *sim.Config) any { return &c.GPU }},
	{"tensor_parallel_size", func(c *sim.Config) any { return &c.TP }},
	{"dtype", func(c *sim.Config) any { return &c.DType }},
	{"kv_cache_dtype", func(c *sim.Config) any { return &c.KVCacheDType }},
	{"max_num_seqs", func(c *sim.Config) any { return &c.MaxNumSeqs }},
	{"max_num_batched_tokens", func(c *sim.Config) any { return &c.MaxNumBatchedTokens }},
	{"block_size", func(c *sim.Config) any { return &c.BlockSize }},
	{"gpu_memory_utilization", func(c *sim.Config) any { return &c.GPUMemoryUtilization }},
	{"enable_chunked_prefill", func(c *sim.Config) any { return &c.EnableChunkedPrefill }},
	{"enable_prefix_caching", func(c *sim.Config) any { return &c.EnablePrefixCaching }},
	{"max_model_len", func(c *sim.Config) any { return &c.MaxModelLen }},
	{"num_gpu_blocks_override", func(c *sim.Config) any { return &c.NumGPUBlocksOverride }},
	{"scheduler", func(c *sim.Config) any { return &c.Scheduler }},
	{"max_waiting", func(c *sim.Config) any { return &c.MaxWaiting }},
	{"max_queue_time", func(c *sim.Config) any { return &c.MaxQueueTime }},
	{"reasoning_tokens", func(c *sim.Config) any { return &c.ReasoningTokens }},
	{"tool_call_share", func(c *sim.Config) any { return &c.ToolCallShare }},
	{"tool_call_tokens", func(c *sim.Config) any { return &c.ToolCallTokens }},
	{"priority", func(c *sim.Config) any { return &c.Priority }},
	{"profile_table", func(c *sim.Config) any { return &c.ProfileTable }},
	{"num_speculative_tokens", func(c *sim.Config) any { return &c.SpecTokens }},
	{"spec_acceptance", func(c *sim.Config) any { return &c.SpecAcceptance }},
	{"spec_draft", func(c *sim.Config) any { return &c.SpecDraft }},
	{"spec_draft_cost_frac", func(c *sim.Config) any { return &c.SpecDraftCostFrac }},
}

// keyOf is the pool key of the engine's field named field (a
// sim.ConfigError's), the name itself if no key sets it.
func keyOf(field string) string {
	var c sim.Config
	if f := reflect.ValueOf(&c).Elem().FieldByName(field); f.IsValid() {
		for _, k := range poolKeys {
			if reflect.ValueOf(k.ptr(&c)).Pointer() == f.Addr().Pointer() {
				return k.key
			}
		}
	}
	return field
}

// keyAliases are other spellings of a key, as the flags have them.
var keyAliases = map[string]string{"tp": "tensor_parallel_size"}

// PoolKeys lists the keys a pool of a cluster file may set, its own
// (name, replicas) first, then the engine's.
func PoolKeys() []string {
	out := slices.Clone(poolOwnKeys)
	for _, k := range poolKeys {
		out = append(out, k.key)
	}
	return out
}

// fileParser walks a cluster file's node tree, each problem a
// *setting.FileError at its node's line.
type fileParser struct {
	file string
	// checked holds the engine settings built so far and whether their
	// model is MoE: pools alike (anchors make them cheap to write) are
	// built once.
	checked map[sim.Config]bool
}

func (p *fileParser) errorf(line int, pool, field, format string, args ...any) *setting.FileError {
	return &setting.FileError{File: p.file, Line: line, Part: poolPart(pool), Key: field, Err: fmt.Errorf(format, args...)}
}

// poolPart is the part of the file a pool's key belongs to, as messages
// name it: pool "NAME"; "" outside the pools.
func poolPart(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf("pool %q", name)
}

// resolve follows an alias (*name) to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// fileEntry is one key of a mapping as written: the key's spelling and
// line, and its value.
type fileEntry struct {
	key  string
	line int
	val  *yaml.Node
}

// entries reads n as a mapping into canonical key → entry: keys are
// lower case with _ between words (tp and tensor-parallel-size are
// tensor_parallel_size), each in known; a merge key (<<: *common, one
// level deep) adds the keys n does not set. Two spellings of one key are
// refused, as is a key reserved for a section not built yet.
func (p *fileParser) entries(n *yaml.Node, pool, what string, known, reserved []string) (map[string]fileEntry, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n.Line, pool, "", "want a mapping (%s)", what)
	}
	out := map[string]fileEntry{}
	var merges []*yaml.Node
	if err := p.collect(n, pool, known, reserved, out, &merges, false); err != nil {
		return nil, err
	}
	for _, m := range merges {
		list := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			list = m.Content
		}
		for _, mm := range list {
			if mm = resolve(mm); mm.Kind != yaml.MappingNode {
				return nil, p.errorf(mm.Line, pool, "<<", "a merge key takes a mapping or a list of mappings")
			}
			if err := p.collect(mm, pool, known, reserved, out, nil, true); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// collect adds mapping n's keys to out, its merge keys' values to merges
// (nil: a merged mapping, which may not merge again); a merged key never
// replaces one set.
func (p *fileParser) collect(n *yaml.Node, pool string, known, reserved []string, out map[string]fileEntry, merges *[]*yaml.Node, merged bool) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errorf(k.Line, pool, "", "a key must be a plain word")
		}
		if k.Value == "<<" && k.Tag == "!!merge" {
			if merges == nil {
				return p.errorf(k.Line, pool, "<<", "a merged mapping may not merge another")
			}
			*merges = append(*merges, resolve(v))
			continue
		}
		key := canonicalKey(k.Value)
		switch {
		case slices.Contains(reserved, key):
			return p.errorf(k.Line, pool, key, "not supported in this build")
		case !slices.Contains(known, key):
			msg := fmt.Sprintf("unknown key %q", k.Value)
			if s := nearest(key, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			} else {
				msg += " (want one of " + strings.Join(known, ", ") + ")"
			}
			return p.errorf(k.Line, pool, "", "%s", msg)
		}
		if prev, dup := out[key]; dup {
			if merged {
				continue
			}
			if prev.key != k.Value {
				return p.errorf(k.Line, pool, key, "given twice (as %s on line %d and as %s)", prev.key, prev.line, k.Value)
			}
			return p.errorf(k.Line, pool, key, "given twice (first on line %d)", prev.line)
		}
		out[key] = fileEntry{key: k.Value, line: k.Line, val: v}
	}
	return nil
}

// canonicalKey is a key's canonical spelling: lower case, _ between
// words, an alias as the key it stands for.
func canonicalKey(k string) string {
	k = strings.ReplaceAll(strings.ToLower(k), "-", "_")
	if a, ok := keyAliases[k]; ok {
		return a
	}
	return k
}

// nearest is the known key within two edits of k, if any.
func nearest(k string, known []string) string {
	best, bestD := "", 3
	if len(k) > 64 {
		return "" // a key that long is no typo of a known one
	}
	for _, w := range known {
		if d := levenshtein.ComputeDistance(k, w); d < bestD {
			best, bestD = w, d
		}
	}
	return best
}

// scalar is e's value as text; a mapping, a list or null is refused.
func (p *fileParser) scalar(e fileEntry, pool, field, want string) (string, int, error) {
	n := resolve(e.val)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", n.Line, p.errorf(n.Line, pool, field, "want %s", want)
	}
	return strings.TrimSpace(n.Value), n.Line, nil
}

// set parses e's value into ptr, by its type.
func (p *fileParser) set(e fileEntry, pool, field string, ptr any) error {
	switch v := ptr.(type) {
	case *string:
		s, _, err := p.scalar(e, pool, field, "a word")
		*v = s
		return err
	case *int:
		s, line, err := p.scalar(e, pool, field, "a whole number")
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return p.errorf(line, pool, field, "%q: want a whole number", s)
		}
		*v = int(n)
	case *float64:
		s, line, err := p.scalar(e, pool, field, "a number")
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return p.errorf(line, pool, field, "%q: want a number", s)
		}
		*v = f
	case *bool:
		s, line, err := p.scalar(e, pool, field, "true or false")
		if err != nil {
			return err
		}
		switch strings.ToLower(s) {
		case "true", "yes", "on":
			*v = true
		case "false", "no", "off":
			*v = false
		default:
			return p.errorf(line, pool, field, "%q: want true or false", s)
		}
	case *time.Duration:
		s, line, err := p.scalar(e, pool, field, "a duration")
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return p.errorf(line, pool, field, "%q: want a duration with a unit, e.g. 30s", s)
		}
		*v = d
	default:
		panic(fmt.Sprintf("cluster: pool key of type %T", ptr))
	}
	return nil
}

// config reads the file's top-level mapping.
func (p *fileParser) config(root *yaml.Node, base sim.Config) (Config, error) {
	top, err := p.entries(root, "", "router, pools", topKeys, topReserved)
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	if e, ok := top["router"]; ok {
		s, line, err := p.scalar(e, "", "router", "a router as --router spells it, e.g. least-outstanding")
		if err != nil {
			return Config{}, err
		}
		if cfg.Router, err = ParseRouter(s); err != nil {
			return Config{}, p.errorf(line, "", "router", "%v", err)
		}
	}
	if e, ok := top["enable_expert_parallel"]; ok {
		if err := p.set(e, "", "enable_expert_parallel", &cfg.ExpertParallel); err != nil {
			return Config{}, err
		}
	}
	e, ok := top["pools"]
	if !ok {
		return Config{}, p.errorf(resolve(root).Line, "", "pools", "missing: want a list of pools of replicas")
	}
	list := resolve(e.val)
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return Config{}, p.errorf(e.line, "", "pools", "want a list of pools, each a mapping with replicas and engine settings")
	}
	names := map[string]int{}
	var pools []filePool
	for i, n := range list.Content {
		pl, err := p.pool(n, i, base, cfg.ExpertParallel)
		if err != nil {
			return Config{}, err
		}
		if line, dup := names[pl.name]; dup {
			return Config{}, p.errorf(pl.line, pl.name, "name", "two pools are named %q (the first on line %d)", pl.name, line)
		}
		names[pl.name] = pl.line
		if len(cfg.Replicas)+pl.replicas > runlog.MaxReplica {
			return Config{}, p.errorf(pl.replicasLine, pl.name, "replicas", "%d replicas in all are too many (at most %d)", len(cfg.Replicas)+pl.replicas, runlog.MaxReplica)
		}
		for range pl.replicas {
			cfg.Replicas = append(cfg.Replicas, pl.engine)
			cfg.Pools = append(cfg.Pools, pl.name)
		}
		pools = append(pools, pl)
	}
	link := ""
	linkLine := 0
	if e, ok := top["kv_link"]; ok {
		s, line, err := p.scalar(e, "", "kv_link", "a link kind, e.g. nvlink4")
		if err != nil {
			return Config{}, err
		}
		if _, err := LinkByName(s); err != nil {
			return Config{}, p.errorf(line, "", "kv_link", "%v", err)
		}
		link, linkLine = s, line
	}
	split, err := p.split(pools, link, linkLine, cfg.ExpertParallel)
	if err != nil {
		return Config{}, err
	}
	cfg.Disagg = split
	return cfg, nil
}

// split is the prefill/decode split the pools' roles make (nil when no
// pool has a role): every pool then has one, the prefill pools first so
// that replicas keep the file's order, and both roles are present.
func (p *fileParser) split(pools []filePool, link string, linkLine int, ep bool) (*Disaggregation, error) {
	var withRole *filePool
	prefill, decode := 0, 0
	for i := range pools {
		pl := &pools[i]
		switch pl.role {
		case "":
			if withRole != nil {
				return nil, p.errorf(pl.line, pl.name, "role", "missing: pool %q has a role, so every pool needs one (prefill or decode)", withRole.name)
			}
			continue
		case RolePrefill:
			if decode > 0 {
				return nil, p.errorf(pl.roleLine, pl.name, "role", "a prefill pool after a decode pool: list the prefill pools first (replicas are numbered in the file's order, prefill first)")
			}
			prefill += pl.replicas
		case RoleDecode:
			decode += pl.replicas
		}
		if withRole == nil {
			if i > 0 {
				return nil, p.errorf(pools[0].line, pools[0].name, "role", "missing: pool %q has a role, so every pool needs one (prefill or decode)", pl.name)
			}
			withRole = pl
		}
	}
	switch {
	case withRole == nil && link != "":
		return nil, p.errorf(linkLine, "", "kv_link", "no pool has a role: a KV link joins a prefill pool to a decode pool (role: prefill, role: decode)")
	case withRole == nil:
		return nil, nil
	case prefill == 0 || decode == 0:
		return nil, p.errorf(withRole.roleLine, withRole.name, "role", "a split needs a prefill pool and a decode pool; every pool here is %s", withRole.role)
	case ep:
		return nil, p.errorf(withRole.roleLine, withRole.name, "role", "a prefill/decode split with enable_expert_parallel is not simulated")
	}
	return &Disaggregation{Prefill: prefill, Link: link}, nil
}

// filePool is one pool read.
type filePool struct {
	name               string
	line, replicasLine int
	replicas           int
	engine             sim.Config
	// role is RolePrefill, RoleDecode or "" (none), given on roleLine.
	role     string
	roleLine int
}

// pool reads pool i (from 0) over base, and checks its engine by building
// one.
func (p *fileParser) pool(n *yaml.Node, i int, base sim.Config, ep bool) (filePool, error) {
	n = resolve(n)
	pl := filePool{name: "pool" + strconv.Itoa(i+1), line: n.Line, replicasLine: n.Line, replicas: 1, engine: base}
	if n.Kind != yaml.MappingNode {
		return pl, p.errorf(n.Line, "", "pools", "pool %d: want a mapping of name, replicas and engine settings", i+1)
	}
	// Messages name the pool as it names itself, even for a mistake
	// above its name.
	for j := 0; j+1 < len(n.Content); j += 2 {
		if k, v := resolve(n.Content[j]), resolve(n.Content[j+1]); k.Value == "name" && v.Kind == yaml.ScalarNode && v.Value != "" {
			pl.name = v.Value
		}
	}
	m, err := p.entries(n, pl.name, "a pool", PoolKeys(), poolReserved)
	if err != nil {
		return pl, err
	}
	if e, ok := m["name"]; ok {
		s, line, err := p.scalar(e, pl.name, "name", "a name")
		if err != nil {
			return pl, err
		}
		if s == "" || strings.ContainsAny(s, "\n\r\t") || len(s) > 64 {
			return pl, p.errorf(line, pl.name, "name", "want a name of 1 to 64 characters on one line")
		}
		pl.name = s
	}
	if e, ok := m["replicas"]; ok {
		if err := p.set(e, pl.name, "replicas", &pl.replicas); err != nil {
			return pl, err
		}
		pl.replicasLine = e.line
		if pl.replicas < 1 {
			return pl, p.errorf(e.line, pl.name, "replicas", "%d: want ≥ 1", pl.replicas)
		}
	}
	if e, ok := m["role"]; ok {
		s, line, err := p.scalar(e, pl.name, "role", "prefill or decode")
		if err != nil {
			return pl, err
		}
		if s != RolePrefill && s != RoleDecode {
			return pl, p.errorf(line, pl.name, "role", "%q: want prefill or decode", s)
		}
		pl.role, pl.roleLine = s, line
	}
	for _, k := range poolKeys {
		if e, ok := m[k.key]; ok {
			if err := p.set(e, pl.name, k.key, k.ptr(&pl.engine)); err != nil {
				return pl, err
			}
		}
	}
	moe, err := p.check(pl.engine)
	if err != nil {
		var ce *sim.ConfigError
		if !errors.As(err, &ce) {
			return pl, p.errorf(pl.line, pl.name, "", "%v", err)
		}
		key := keyOf(ce.Field)
		if e, ok := m[key]; ok {
			return pl, p.errorf(e.line, pl.name, key, "%v", ce.Err)
		}
		// The pool inherited the setting at fault from the command line.
		return pl, p.errorf(pl.line, pl.name, key, "%v (as the command line sets it)", ce.Err)
	}
	if ep && !moe {
		line := pl.line
		if e, ok := m["model"]; ok {
			line = e.line
		}
		return pl, p.errorf(line, pl.name, "model", "enable_expert_parallel needs an MoE model; %s is dense", pl.engine.Model)
	}
	return pl, nil
}

// check builds an engine of c, as the cluster will, and says whether its
// model is MoE; the engine's error if it refuses c.
func (p *fileParser) check(c sim.Config) (moe bool, err error) {
	if moe, ok := p.checked[c]; ok {
		return moe, nil
	}
	eng, err := sim.New(c)
	if err != nil {
		return false, err
	}
	if p.checked == nil {
		p.checked = map[sim.Config]bool{}
	}
	moe = eng.Deployment().MoE()
	p.checked[c] = moe
	return moe, nil
}
