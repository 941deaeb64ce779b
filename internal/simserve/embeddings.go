package simserve

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/goodput/goodput/internal/sim"
)

// OpenAI's embeddings API (POST /v1/embeddings) over the same engine: each
// input is a prompt-only request, so an embedding costs its prefill and
// embedding throughput depends on the load the engine carries. The engine
// generates at least one token per request (sim.Request.OutputTokens > 0),
// so each input is a request for exactly one output token, which is
// discarded: the answer goes out when the last input's prefill (and that
// one token, which ends it in the same iteration) is done. The engine's
// counters therefore count one generation token per input, and its
// request_success counter one "stop" per input, as a pooling request.

// DefaultEmbeddingDimensions is the length of an embedding vector when
// neither the request nor Options say.
const DefaultEmbeddingDimensions = 1024

// MaxEmbeddingDimensions is the longest embedding vector served.
const MaxEmbeddingDimensions = 8192

// maxEmbeddingInputs is OpenAI's limit on inputs per request.
const maxEmbeddingInputs = 2048

// embeddingsRequest is the JSON body of /v1/embeddings; user and other
// fields are accepted and ignored.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// embedRequest is a validated embeddings request: texts, or token ids,
// one entry per input.
type embedRequest struct {
	model  string
	texts  []string
	ids    [][]int
	base64 bool
	dims   int  // 0: the server's default
	listed bool // input was an array of inputs: errors name input[i]
}

func (e *embedRequest) inputs() int { return len(e.texts) + len(e.ids) }

// parseEmbeddingsRequest decodes and validates a /v1/embeddings body.
// input is a string, an array of strings, an array of token ids, or an
// array of arrays of token ids. Errors are *apiError with status 400 naming
// the field.
func parseEmbeddingsRequest(body []byte) (*embedRequest, error) {
	var w embeddingsRequest
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	e := &embedRequest{model: w.Model}
	if w.EncodingFormat != nil {
		switch *w.EncodingFormat {
		case "float":
		case "base64":
			e.base64 = true
		default:
			return nil, badRequest("encoding_format", `want "float" or "base64", got %q`, *w.EncodingFormat)
		}
	}
	if w.Dimensions != nil {
		if *w.Dimensions < 1 || *w.Dimensions > MaxEmbeddingDimensions {
			return nil, badRequest("dimensions", "want 1 to %d, got %d", MaxEmbeddingDimensions, *w.Dimensions)
		}
		e.dims = *w.Dimensions
	}
	if isNull(w.Input) {
		return nil, badRequest("input", "required")
	}
	var s string
	if json.Unmarshal(w.Input, &s) == nil {
		if s == "" {
			return nil, badRequest("input", "must not be empty")
		}
		e.texts = []string{s}
		return e, nil
	}
	var elems []json.RawMessage
	if w.Input[0] != '[' || json.Unmarshal(w.Input, &elems) != nil {
		return nil, badRequest("input", "want a string, an array of strings, an array of token ids or an array of arrays of token ids")
	}
	switch {
	case len(elems) == 0:
		return nil, badRequest("input", "must not be empty")
	case len(elems) > maxEmbeddingInputs:
		return nil, badRequest("input", "at most %d inputs per request, got %d", maxEmbeddingInputs, len(elems))
	}
	switch elems[0][0] {
	case '"':
		e.listed = true
		for i, el := range elems {
			f := "input[" + strconv.Itoa(i) + "]"
			if json.Unmarshal(el, &s) != nil {
				return nil, badRequest(f, "want a string, as input[0] is")
			}
			if s == "" {
				return nil, badRequest(f, "must not be empty")
			}
			e.texts = append(e.texts, s)
		}
	case '[':
		e.listed = true
		for i, el := range elems {
			f := "input[" + strconv.Itoa(i) + "]"
			ids, err := tokenIDs(el, f)
			if err != nil {
				return nil, err
			}
			e.ids = append(e.ids, ids)
		}
	default:
		ids, err := tokenIDs(w.Input, "input")
		if err != nil {
			return nil, err
		}
		e.ids = [][]int{ids}
	}
	return e, nil
}

// tokenIDs reads a non-empty array of token ids (≥ 0).
func tokenIDs(raw json.RawMessage, field string) ([]int, error) {
	var ids []int
	if raw[0] != '[' || json.Unmarshal(raw, &ids) != nil {
		return nil, badRequest(field, "want an array of token ids (integers)")
	}
	if len(ids) == 0 {
		return nil, badRequest(field, "must not be empty")
	}
	for j, id := range ids {
		if id < 0 {
			return nil, badRequest(field+"["+strconv.Itoa(j)+"]", "token ids are ≥ 0, got %d", id)
		}
	}
	return ids, nil
}

func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	arrival := s.clock()
	body, aerr := readBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	er, err := parseEmbeddingsRequest(body)
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if !s.matchModel(er.model) {
		writeError(w, s.modelNotFound(er.model))
		return
	}
	dims := er.dims
	if dims == 0 {
		dims = s.opt.EmbeddingDimensions
	}
	if dims == 0 {
		dims = DefaultEmbeddingDimensions
	}
	n := er.inputs()
	infos := make([]promptInfo, n)
	total := 0
	for i := range n {
		if er.texts != nil {
			infos[i] = analyzePrompt(er.texts[i:i+1], nil, 0, s.blockTokens, false)
		} else {
			infos[i] = analyzePrompt(nil, er.ids[i], 0, s.blockTokens, false)
		}
		f := "input"
		if er.listed {
			f = "input[" + strconv.Itoa(i) + "]"
		}
		switch tok := infos[i].tokens; {
		case tok == 0:
			writeError(w, badRequest(f, "has no tokens"))
			return
		case s.maxModelLen > 0 && tok >= s.maxModelLen:
			// The engine's one token must fit beside the prompt.
			writeError(w, badRequest(f, "this model's maximum context length is %d tokens; the input has %d", s.maxModelLen, tok))
			return
		}
		total += infos[i].tokens
	}
	streams := make([]*stream, 0, n)
	abortAll := func() {
		for _, st := range streams {
			s.abort(st) // a no-op for a request already ended
		}
	}
	for i := range n {
		id, seq := s.nextID()
		st := newStream(id, seq, arrival)
		st.finishReason = "stop"
		req := sim.Request{ID: id, PromptTokens: infos[i].tokens, OutputTokens: 1,
			BlockHashes: infos[i].hashes, HashBlockTokens: s.blockTokens}
		if !s.submit(r.Context(), st, req) {
			abortAll()
			writeError(w, &apiError{status: http.StatusServiceUnavailable, message: "server is not running"})
			return
		}
		streams = append(streams, st)
	}
	replicas := make([]int, len(streams))
	for i, st := range streams {
		snap, ok := s.awaitEnd(r, st)
		replicas[i] = snap.replica
		if !ok {
			abortAll() // the client left
			return
		}
		if snap.state == stateFailed {
			abortAll()
			if snap.status == http.StatusTooManyRequests {
				s.setRetryAfter(w.Header(), snap.retry)
			}
			writeError(w, &apiError{status: snap.status, message: snap.errMsg})
			return
		}
	}
	for i := range n {
		s.ms[replicas[i]].observeFinished(infos[i].tokens, 1)
	}
	out := make([]byte, 0, 64+n*(24+dims*12))
	out = append(out, `{"object":"list","data":[`...)
	vec := make([]float32, dims)
	for i := range n {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		embedding(vec, infos[i].hash)
		out = appendVector(out, vec, er.base64)
		out = append(out, '}')
	}
	out = append(out, `],"model":`...)
	out = appendJSONString(out, s.model)
	out = append(out, `,"usage":{"prompt_tokens":`...)
	out = strconv.AppendInt(out, int64(total), 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, int64(total), 10)
	out = append(out, "}}"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// awaitEnd waits until st finished or failed (its tokens are dropped). It
// reports false when the client left first.
func (s *Server) awaitEnd(r *http.Request, st *stream) (snapshot, bool) {
	for {
		snap := st.take(nil)
		if snap.state != stateLive {
			return snap, true
		}
		select {
		case <-st.notify:
		case <-r.Context().Done():
			return snap, false
		case <-s.stopped:
			if snap = st.take(nil); snap.state == stateLive {
				snap.state, snap.status, snap.errMsg = stateFailed, http.StatusServiceUnavailable, "server shutting down"
			}
			return snap, true
		}
	}
}

// saltEmbedding keeps embedding components independent of the other
// draws made from a prompt's hash.
const saltEmbedding = 0x94d049bb133111eb

// embedding fills vec with a pseudo-random unit vector drawn from hash
// (the input's content hash: the same input always embeds alike).
// Component i depends only on hash and i, so a shorter vector (a smaller
// dimensions) is a longer one's prefix renormalised, as OpenAI's shortened
// embeddings are.
func embedding(vec []float32, hash uint64) {
	seed := sim.Mix64(hash ^ saltEmbedding)
	var sum float64
	for i := range vec {
		u := float64(sim.Mix64(seed+uint64(i)*0x9e3779b97f4a7c15)>>11)/(1<<53)*2 - 1 // [-1, 1)
		vec[i] = float32(u)
		sum += u * u
	}
	if sum == 0 {
		vec[0], sum = 1, 1
	}
	inv := 1 / math.Sqrt(sum)
	for i := range vec {
		vec[i] = float32(float64(vec[i]) * inv)
	}
}

// appendVector appends vec as a JSON array of floats or, with b64, as
// OpenAI's base64 string of little-endian float32s.
func appendVector(dst []byte, vec []float32, b64 bool) []byte {
	if b64 {
		raw := make([]byte, 4*len(vec))
		for i, v := range vec {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, raw)
		return append(dst, '"')
	}
	dst = append(dst, '[')
	for i, v := range vec {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, float64(v), 'g', -1, 32)
	}
	return append(dst, ']')
}
