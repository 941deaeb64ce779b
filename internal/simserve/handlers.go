package simserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sse"
	"github.com/goodput/goodput/internal/wire/protocols"
)

// Handler returns the HTTP API: POST /v1/completions,
// /v1/chat/completions, /v1/messages (Anthropic's Messages API),
// /v1/responses (OpenAI's Responses API) and /v1/embeddings, GET
// /v1/models, GET /health, POST /tokenize, GET /metrics, and GET and POST
// /goodput/slowdown (see Server.SetSlowdown). Generation requests are
// answered only while Run is running.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	// Each wire protocol at its route, as the protocols table has it.
	served := map[string]wire{}
	for _, p := range protocols.All() {
		side, ok := serverSides[p.Name()]
		if !ok {
			continue // a protocol the simulator does not speak
		}
		mux.HandleFunc("POST "+p.Route(), side.serve(s))
		served[p.Route()] = side.errors
	}
	mux.HandleFunc("GET /goodput/slowdown", s.serveSlowdown)
	mux.HandleFunc("POST /goodput/slowdown", s.serveSlowdown)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /tokenize", s.serveTokenize)
	// The families shaped by the engine's limits are registered here, once:
	// New builds the metrics knowing only the model name.
	for i, m := range s.ms {
		d := s.repDescribe[i]
		m.bindEngine(s.log, engineMaxModelLen(s.engCfg, d), engineBlockSize(s.engCfg, d), d)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		notAllowed := &apiError{status: http.StatusMethodNotAllowed, message: fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path)}
		if wr, ok := served[r.URL.Path]; ok {
			wr.errorAnswer(w, notAllowed) // in the protocol's own shape
			return
		}
		switch r.URL.Path {
		case "/tokenize", "/v1/models", "/health", "/metrics", "/goodput/slowdown":
			writeError(w, notAllowed)
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	})
	if s.fleet != nil {
		return withSession(mux)
	}
	return mux
}

// serverSide is the simulator's side of one wire protocol: its handler,
// and how an error is answered in the protocol's shape.
type serverSide struct {
	serve  func(s *Server) http.HandlerFunc
	errors wire
}

// serverSides are the simulator's side of the wire protocols, by the
// protocols table's name; Handler mounts each at its protocol's route.
var serverSides = map[string]serverSide{
	"openai": {errors: &openaiWire{}, serve: func(s *Server) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s.serveGenerate(w, r, false) }
	}},
	"openai-chat": {errors: &openaiWire{}, serve: func(s *Server) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { s.serveGenerate(w, r, true) }
	}},
	"anthropic-messages": {errors: &messagesWire{}, serve: func(s *Server) http.HandlerFunc { return s.serveMessages }},
	"openai-responses":   {errors: &responsesWire{}, serve: func(s *Server) http.HandlerFunc { return s.serveResponses }},
	"openai-embeddings":  {errors: &openaiWire{}, serve: func(s *Server) http.HandlerFunc { return s.serveEmbeddings }},
}

// writeError answers with an OpenAI error object.
func writeError(w http.ResponseWriter, e *apiError) {
	var b errorBody
	b.Error.Message = e.message
	b.Error.Type = errorType(e.status)
	if e.param != "" {
		b.Error.Param = &e.param
	}
	b.Error.Code = e.status
	writeJSON(w, e.status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // our own types always marshal
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("request body over %d bytes", mb.Limit)}
		}
		return nil, badRequest("", "reading body: %v", err)
	}
	return body, nil
}

func (s *Server) modelNotFound(name string) *apiError {
	return &apiError{status: http.StatusNotFound, param: "model",
		message: fmt.Sprintf("The model `%s` does not exist.", name)}
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		Root        string `json:"root"`
		MaxModelLen int    `json:"max_model_len"`
	}
	writeJSON(w, http.StatusOK, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{ID: s.model, Object: "model", Created: s.base.Unix(), OwnedBy: "goodput-sim", Root: s.model, MaxModelLen: s.maxModelLen}}})
}

func (s *Server) serveTokenize(w http.ResponseWriter, r *http.Request) {
	body, aerr := readBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	model, text, ids, chat, err := parseTokenizeRequest(body)
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if !s.matchModel(model) {
		writeError(w, s.modelNotFound(model))
		return
	}
	tokens := ids
	if tokens == nil {
		tokens = promptIDs(text, s.opt.ChatTokensPerMessage, chat)
	}
	if tokens == nil {
		tokens = []int{}
	}
	writeJSON(w, http.StatusOK, struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}{len(tokens), s.maxModelLen, tokens})
}

// plan is what the server decided for one generation request.
type plan struct {
	g            *genRequest
	info         promptInfo
	outputTokens int
	finish       string // "length", "stop" or "tool_calls"
	// A tool-call answer: the declared tools called (indices into g.tools),
	// in order, each callTokens long, all hidden; and the calls built from
	// them once the response id is known.
	callTools  []int
	callTokens int
	calls      []toolCall
}

// planRequest validates g against the model's limits and decides its
// output length: max_tokens (or what is left of max_model_len) with
// ignore_eos, else the natural length (see sim.NaturalLength) capped by it and
// raised to min_tokens. An answer with tool calls (see decideCalls) is
// callTokens per call instead, capped by the same limit.
func (s *Server) planRequest(g *genRequest) (*plan, *apiError) {
	p := &plan{g: g}
	p.info = analyzePrompt(g.text, g.tokenIDs, s.opt.ChatTokensPerMessage, s.blockTokens, g.chat)
	promptField, maxField := g.promptParam, g.maxParam
	if promptField == "" {
		promptField = "prompt"
		if g.chat {
			promptField = "messages"
		}
	}
	if maxField == "" {
		maxField = "max_tokens"
	}
	if p.info.tokens == 0 {
		return nil, badRequest(promptField, "has no tokens")
	}
	if s.maxModelLen > 0 {
		if p.info.tokens >= s.maxModelLen {
			return nil, badRequest(promptField, "this model's maximum context length is %d tokens; the prompt has %d, leaving none for the completion",
				s.maxModelLen, p.info.tokens)
		}
		if g.maxTokens > 0 && p.info.tokens+g.maxTokens > s.maxModelLen {
			return nil, badRequest(maxField, "this model's maximum context length is %d tokens; you requested %d (%d in the prompt, %d in the completion)",
				s.maxModelLen, p.info.tokens+g.maxTokens, p.info.tokens, g.maxTokens)
		}
	}
	limit := g.maxTokens
	if limit == 0 {
		limit = 1 << 20
		if s.maxModelLen > 0 {
			limit = s.maxModelLen - p.info.tokens
		}
	}
	if g.minTokens > limit {
		return nil, badRequest("min_tokens", "must be at most %d (what max_model_len leaves), got %d", limit, g.minTokens)
	}
	idx, aerr := decideCalls(g, p.info.hash, s.toolShare)
	if aerr != nil {
		return nil, aerr
	}
	if idx != nil {
		p.callTools, p.callTokens = idx, s.toolTokens
		p.outputTokens, p.finish = len(idx)*s.toolTokens, "tool_calls"
		if p.outputTokens > limit {
			p.outputTokens, p.finish = limit, "length"
		}
		return p, nil
	}
	p.outputTokens, p.finish = limit, "length"
	if !g.ignoreEOS {
		median := s.opt.NaturalOutputMedian
		if median <= 0 {
			median = 200
		}
		if n := max(sim.NaturalLength(p.info.hash, median), g.minTokens); n < limit {
			p.outputTokens, p.finish = n, "stop"
		}
	}
	return p, nil
}

func (s *Server) serveGenerate(w http.ResponseWriter, r *http.Request, chat bool) {
	arrival := s.clock()
	body, aerr := readBody(w, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	g, err := parseGenRequest(body, chat)
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if !s.matchModel(g.model) {
		writeError(w, s.modelNotFound(g.model))
		return
	}
	reqID := r.Header.Get("X-Request-Id")
	s.generate(w, r, arrival, g, &openaiWire{}, func(seq uint64) string { return responseID(chat, reqID, seq) })
}

// generate plans g, hands it to the engine and writes its answer in wr's
// protocol; newID makes the response id from the request's sequence
// number. Every generation endpoint goes through it, so they share
// planning, timing, metrics, reasoning and tool calls.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, arrival int64, g *genRequest, wr wire, newID func(seq uint64) string) {
	if v := r.Header.Values(ToolCallsHeader); len(v) > 0 {
		var err error
		if g.forcedCalls, err = parseToolCallsHeader(strings.Join(v, ",")); err != nil {
			wr.errorAnswer(w, err.(*apiError))
			return
		}
	}
	p, aerr := s.planRequest(g)
	if aerr != nil {
		wr.errorAnswer(w, aerr)
		return
	}
	id, seq := s.nextID()
	st := newStream(id, seq, arrival)
	st.finishReason = p.finish
	if p.finish == "tool_calls" {
		st.finishReason = "stop" // the engine's reason, which vLLM's metrics count
	}
	req := sim.Request{
		ID:              id,
		PromptTokens:    p.info.tokens,
		OutputTokens:    p.outputTokens,
		BlockHashes:     p.info.hashes,
		HashBlockTokens: s.blockTokens,
		Priority:        g.priority,
	}
	reasoning := s.engCfg.ReasoningFor(p.outputTokens)
	if g.chat && s.opt.ChatTokensPerMessage == 0 && p.callTools == nil && reasoning == 0 {
		// The answer's blocks get the identity they will have when the
		// client resends it (hidden reasoning is not resent, nor does a
		// template's per-message header line up: then only the prompt's).
		req.BlockHashes = answerHashes(p.info, seq, p.outputTokens, s.blockTokens)
	}
	if g.reasoningCap > 0 && reasoning > g.reasoningCap {
		// A thinking budget caps what the engine would otherwise think.
		req.ReasoningTokens = g.reasoningCap
	}
	respID := newID(seq)
	if p.callTools != nil {
		// Tool calls are generated but hidden: the first one's first
		// token is the TTFT, and no visible token comes.
		req.ReasoningTokens = p.outputTokens
		p.calls = makeCalls(g.tools, p.callTools, respID, p.info.hash)
	}
	if !s.submit(r.Context(), st, req) {
		wr.errorAnswer(w, &apiError{status: http.StatusServiceUnavailable, message: "server is not running"})
		return
	}
	rs := &response{s: s, w: w, st: st, p: p, chat: g.chat, created: time.Now().Unix(), respID: respID, wire: wr}
	if g.stream {
		rs.w, rs.pub = s.publishing(w, st.seq)
	}
	if !rs.run(r) {
		s.abort(st)
	}
}

func responseID(chat bool, reqID string, seq uint64) string {
	if reqID == "" {
		reqID = strconv.FormatUint(seq, 16)
	}
	if chat {
		return "chatcmpl-" + reqID
	}
	return "cmpl-" + reqID
}

// response writes one generation request's answer as its tokens arrive.
type response struct {
	s       *Server
	w       http.ResponseWriter
	st      *stream
	p       *plan
	chat    bool
	created int64
	respID  string
	wire    wire       // the protocol the answer is written in
	pub     *publisher // the publish path (Options.Publish), nil none

	sw         *sse.Writer
	head       []byte
	buf        []byte
	text       []byte // the piece's token text
	dbuf       []delivery
	generated  int // tokens written so far
	reasoning  int // of which hidden
	cached     int
	finishSent bool
	timing     *runlog.ServerTiming // the engine's, once the request finished
	replica    int                  // the replica serving it, once routed
	// non-streaming accumulation
	content, thinking []byte
}

// run waits for the engine and writes the answer. It reports whether the
// request ended (finished or failed) rather than being cut off by the
// client or a write error, in which case the caller aborts it.
func (rs *response) run(r *http.Request) bool {
	started := false
	for {
		select {
		case <-rs.st.notify:
		case <-r.Context().Done():
			return false
		case <-rs.s.stopped:
		}
		snap := rs.st.take(rs.dbuf)
		rs.dbuf = snap.deliveries
		rs.cached = snap.cached
		rs.replica = snap.replica
		if snap.timing != nil {
			rs.timing = snap.timing
		}
		select {
		case <-rs.s.stopped:
			if snap.state == stateLive {
				snap.state, snap.status, snap.errMsg = stateFailed, http.StatusServiceUnavailable, "server shutting down"
			}
		default:
		}
		if snap.state == stateFailed && !started {
			rs.writeFailure(snap)
			return true
		}
		if !rs.g().stream {
			for _, d := range snap.deliveries {
				rs.wire.accumulate(rs, d)
			}
			if snap.state == stateFinished {
				rs.finished()
				rs.nameReplica()
				rs.wire.whole(rs)
				return true
			}
			continue
		}
		// The stream starts (headers, and chat's role-only chunk, as vLLM
		// sends at once) when the engine has admitted the request, so that
		// an immediate admission rejection can still be a 429.
		if !started && (snap.admitted || len(snap.deliveries) > 0 || snap.state != stateLive) {
			started = true
			rs.nameReplica()
			if !rs.wire.start(rs) {
				return false
			}
		}
		for i, d := range snap.deliveries {
			// The piece that completes the planned output carries the
			// finish reason, as vLLM's last token chunk does.
			last := rs.generated+d.tokens >= rs.p.outputTokens ||
				snap.state == stateFinished && i == len(snap.deliveries)-1
			if !rs.pub.piece(r.Context(), d, last) || !rs.wire.piece(rs, d, last) {
				return false
			}
			if f := rs.s.onDepart; f != nil {
				f(rs.st.seq, d.at, rs.s.clock())
			}
		}
		switch snap.state {
		case stateFinished:
			rs.finished()
			rs.pub.release()
			rs.wire.end(rs)
			return true
		case stateFailed:
			// Mid-stream failure (queued too long, shutdown): the
			// protocol's error event, since the status line is sent.
			rs.pub.release()
			rs.wire.failStream(rs, snap.status, snap.errMsg)
			return true
		}
	}
}

// wire is one protocol's way of writing a generation answer: OpenAI's
// completions and chat chunks, Anthropic's Messages events, OpenAI's
// Responses events. response.run calls it; the implementation keeps the
// protocol's own per-answer state, so each request gets a fresh one.
type wire interface {
	// errorAnswer writes e as the protocol's HTTP error answer.
	errorAnswer(w http.ResponseWriter, e *apiError)
	// start begins a streamed answer once the engine admitted the request.
	start(rs *response) bool
	// piece writes (and flushes) the tokens of d, counting them; last
	// says d completes the output. False means the client is gone.
	piece(rs *response, d delivery, last bool) bool
	// end closes a streamed answer whose request finished.
	end(rs *response)
	// failStream ends a started stream with an error.
	failStream(rs *response, status int, msg string)
	// accumulate counts d into a non-streamed answer.
	accumulate(rs *response, d delivery)
	// whole writes the non-streamed answer of a finished request.
	whole(rs *response)
}

// openaiWire writes OpenAI's /v1/completions and /v1/chat/completions
// answers, as vLLM does.
type openaiWire struct{}

var _ wire = (*openaiWire)(nil)

func (*openaiWire) errorAnswer(w http.ResponseWriter, e *apiError) { writeError(w, e) }
func (*openaiWire) start(rs *response) bool                        { return rs.startStream() }
func (*openaiWire) piece(rs *response, d delivery, last bool) bool {
	return rs.writePiece(d, last)
}
func (*openaiWire) accumulate(rs *response, d delivery) { rs.accumulate(d) }
func (*openaiWire) whole(rs *response)                  { rs.writeWhole() }

func (*openaiWire) end(rs *response) {
	if !rs.finishSent {
		// Finished without a token in this batch: an empty chunk
		// carries the finish reason.
		rs.buf = appendChunk(rs.buf[:0], rs.head, rs.chat, chunkContent, nil, rs.p.finish, nil)
		if rs.sw.WriteEvent("", "", rs.buf) != nil {
			return
		}
	}
	rs.endStream()
}

func (*openaiWire) failStream(rs *response, status int, msg string) {
	// An error event, as vLLM sends one once a stream has started.
	var b errorBody
	b.Error.Message, b.Error.Type, b.Error.Code = msg, errorType(status), status
	data, _ := json.Marshal(b)
	_ = rs.sw.WriteEvent("", "", data)
	_ = rs.sw.WriteEvent("", "", []byte("[DONE]"))
}

func (rs *response) g() *genRequest { return rs.p.g }

// nameReplica sets the ReplicaHeader of a fleet's answer, before the
// answer's header is written.
func (rs *response) nameReplica() {
	if rs.s.fleet != nil {
		rs.w.Header().Set(ReplicaHeader, strconv.Itoa(rs.replica+1))
	}
}

// finished counts the finished request's token histograms. The handler
// does it, not the engine goroutine, because it holds the counts vLLM
// observes (prompt, and every token generated, now all taken from the
// mailbox), and it does so before writing the answer's end, so a client
// holding its answer finds it counted.
func (rs *response) finished() {
	rs.s.ms[rs.replica].observeFinished(rs.p.info.tokens, rs.generated)
}

func (rs *response) writeFailure(snap snapshot) {
	e := &apiError{status: snap.status, message: snap.errMsg}
	if snap.status == http.StatusTooManyRequests {
		rs.s.setRetryAfter(rs.w.Header(), snap.retry)
	}
	rs.wire.errorAnswer(rs.w, e)
}

// setRetryAfter sets the Retry-After header of a 429 (whole seconds,
// rounded up): the wait the refuser advertised (ns, a gateway's rate
// limit), else Options.RetryAfter.
func (s *Server) setRetryAfter(h http.Header, advertised int64) {
	ra := time.Duration(advertised)
	if ra <= 0 {
		ra = s.opt.RetryAfter
	}
	if ra <= 0 {
		ra = time.Second
	}
	h.Set("Retry-After", strconv.Itoa(int((ra+time.Second-1)/time.Second)))
}

func (rs *response) startStream() bool {
	h := rs.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	rs.w.WriteHeader(http.StatusOK)
	rs.sw = sse.NewWriter(rs.w)
	rs.head = chunkHead(rs.chat, rs.respID, rs.s.model, rs.created)
	if rs.chat {
		// vLLM's first chat chunk carries the role only.
		var u *usage
		if rs.g().continuousUsage {
			uu := rs.usage()
			u = &uu
		}
		rs.buf = appendChunk(rs.buf[:0], rs.head, true, chunkRole, nil, "", u)
		return rs.sw.WriteEvent("", "", rs.buf) == nil
	}
	// Completions have no first chunk: send the headers now all the same.
	return http.NewResponseController(rs.w).Flush() == nil
}

func (rs *response) usage() usage {
	return makeUsage(rs.p.info.tokens, rs.generated, rs.cached, rs.reasoning)
}

// pieceText sets rs.text to the token text of d (for completions, with the
// <think> markers a thinking model's raw output has).
func (rs *response) pieceText(d delivery) {
	rs.text = rs.text[:0]
	if rs.p.calls != nil {
		rs.text = appendToolDelta(rs.text, rs.p.calls, rs.st.seq, rs.p.callTokens, rs.generated, d.tokens)
		return
	}
	if !rs.chat {
		if d.hidden && rs.generated == 0 {
			rs.text = append(rs.text, "<think>"...)
		}
		if !d.hidden && rs.reasoning > 0 && rs.reasoning == rs.generated {
			rs.text = append(rs.text, "</think>"...)
		}
	}
	rs.text = appendFiller(rs.text, rs.st.seq, rs.generated, d.tokens)
}

func (rs *response) count(d delivery) {
	rs.generated += d.tokens
	if d.hidden {
		rs.reasoning += d.tokens
	}
}

func (rs *response) writePiece(d delivery, last bool) bool {
	rs.pieceText(d)
	rs.count(d)
	kind := chunkContent
	switch {
	case rs.p.calls != nil:
		kind = chunkToolCalls
	case d.hidden && rs.chat:
		kind = chunkReasoning
	}
	finish := ""
	if last {
		finish = rs.p.finish
		rs.finishSent = true
	}
	var u *usage
	if rs.g().continuousUsage {
		uu := rs.usage()
		u = &uu
	}
	rs.buf = appendChunk(rs.buf[:0], rs.head, rs.chat, kind, rs.text, finish, u)
	return rs.sw.WriteEvent("", "", rs.buf) == nil
}

func (rs *response) endStream() {
	if rs.g().includeUsage {
		rs.buf = appendUsageChunk(rs.buf[:0], rs.head, rs.usage(), makeMetrics(rs.timing, rs.generated))
		_ = rs.sw.WriteEvent("", "", rs.buf)
	}
	_ = rs.sw.WriteEvent("", "", []byte("[DONE]"))
}

func (rs *response) accumulate(d delivery) {
	if rs.p.calls != nil {
		rs.count(d) // the calls are built whole at the end
		return
	}
	rs.pieceText(d)
	if d.hidden && rs.chat {
		rs.thinking = append(rs.thinking, rs.text...)
	} else {
		rs.content = append(rs.content, rs.text...)
	}
	rs.count(d)
}

func (rs *response) writeWhole() {
	u := rs.usage()
	if rs.chat {
		msg := chatMessage{Role: "assistant"}
		if rs.p.calls != nil {
			// content null, as OpenAI answers a call
			msg.ToolCalls = wholeToolCalls(rs.p.calls, rs.st.seq, rs.p.callTokens, rs.generated)
		} else {
			c := string(rs.content)
			msg.Content = &c
		}
		if rs.reasoning > 0 && rs.p.calls == nil {
			t := string(rs.thinking)
			msg.ReasoningContent = &t
		}
		writeJSON(rs.w, http.StatusOK, chatResponse{
			ID: rs.respID, Object: "chat.completion", Created: rs.created, Model: rs.s.model,
			Choices: []chatChoice{{Message: msg, FinishReason: rs.p.finish}}, Usage: u,
			Metrics: makeMetrics(rs.timing, rs.generated),
		})
		return
	}
	writeJSON(rs.w, http.StatusOK, completionResponse{
		ID: rs.respID, Object: "text_completion", Created: rs.created, Model: rs.s.model,
		Choices: []completionChoice{{Text: string(rs.content), FinishReason: rs.p.finish}}, Usage: u,
		Metrics: makeMetrics(rs.timing, rs.generated),
	})
}
