package workload

// rows is a dataset of precomputed shapes (lengths, arrivals, block hashes)
// whose prompts are synthesized on demand. Requests with BlockHashes get one
// text segment per hash, so equal leading hashes give equal leading text.
type rows struct {
	name   string
	shapes []Request
	text   texter
}

var _ Dataset = (*rows)(nil)

func (d *rows) Name() string { return d.name }
func (d *rows) Len() int     { return len(d.shapes) }

func (d *rows) Shape(i int) Request {
	r := d.shapes[i]
	r.BlockHashes = append([]uint64(nil), r.BlockHashes...)
	return r
}

func (d *rows) Request(i int) Request {
	r := d.Shape(i)
	var segs []segment
	if r.HashBlockTokens > 0 {
		segs = make([]segment, len(r.BlockHashes))
		for j, h := range r.BlockHashes {
			segs[j] = segment{key: h, tokens: r.HashBlockTokens}
		}
	}
	d.text.prompt(&r, segs)
	return r
}

// Sampling says how a dataset's rows become requests, as vLLM's
// --disable-shuffle and --no-oversample do.
type Sampling struct {
	// NoShuffle keeps the file's order instead of a seeded shuffle.
	NoShuffle bool
	// NoOversample sends each row at most once: a run asking for more
	// requests than the file has gets as many as it has.
	NoOversample bool
}

// sampleOrder picks k of n rows (k ≤ 0: all n): a seeded shuffle (or the
// file's order), then, past n, rows drawn with replacement unless
// s.NoOversample.
func sampleOrder(n, k int, seed int64, s Sampling) []int {
	if k <= 0 || (s.NoOversample && k > n) {
		k = n
	}
	rng := rngFor(seed, streamSample, 0)
	perm := rng.Perm(n)
	if s.NoShuffle {
		for i := range perm {
			perm[i] = i
		}
	}
	if k <= n {
		return perm[:k]
	}
	out := make([]int, k)
	copy(out, perm)
	for i := n; i < k; i++ {
		out[i] = rngFor(seed, streamSample, i).IntN(n)
	}
	return out
}
