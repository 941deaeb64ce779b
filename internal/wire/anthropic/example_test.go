package anthropic_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/wire"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/wire/anthropic"
)

// Example measures a short Messages stream: the thinking block's token is
// the first (TTFT), the text block's the first visible one (TTP), and the
// counts come from the usage that message_start and message_delta report.
func Example() {
	events := []string{
		`{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":12,"cache_read_input_tokens":30,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Easy."}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Four"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"."}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
		`{"type":"message_stop"}`,
	}
	var m wire.StreamMeter
	m.SetDecoder(anthropic.Messages.NewDecoder())
	rec := &runlog.Record{}
	m.Reset(rec)
	for i, ev := range events {
		m.Event([]byte(ev), int64(i+1)*1e6, false) // event i+1 arrives at i+1 ms
	}
	m.EOF(int64(len(events)+1) * 1e6)
	m.Close(0)
	ttft, _ := rec.TTFT()
	ttp, _ := rec.TTP()
	fmt.Println("TTFT", ttft, "TTP", ttp, "finish", rec.FinishReason)
	fmt.Println("prompt", rec.PromptTokens, "cached", rec.CachedTokens, "completion", rec.CompletionTokens)
	// Output:
	// TTFT 3ms TTP 5ms finish stop
	// prompt 42 cached 30 completion 3
}
