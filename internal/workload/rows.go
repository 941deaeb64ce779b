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

// sampleOrder returns which of n source rows each of k requests uses:
// a seeded shuffle (without replacement) while k <= n, as vLLM samples
// datasets, and independent uniform draws beyond that. k <= 0 means n.
func sampleOrder(n, k int, seed int64) []int {
	if k <= 0 {
		k = n
	}
	rng := rngFor(seed, streamSample, 0)
	perm := rng.Perm(n)
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
