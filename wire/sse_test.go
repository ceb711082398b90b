package wire

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParseSSEStrict(t *testing.T) {
	body := ": keep-alive\n\n" +
		"event: start\ndata: {\"run_id\":\"r1\"}\n\n" +
		"event: delta\r\ndata: {\"text\":\r\ndata: \"hi\"}\r\n\r\n" +
		"id: 7\nretry: 1000\nevent: step\ndata:{\"name\":\"a\"}\nfoo: bar\n: note\n\n" +
		"event: done\ndata: {}"
	s := ParseSSE([]byte(body), 1<<16)
	assert.NilError(t, s.Err)
	assert.Check(t, is.DeepEqual(s.Comments, []string{" keep-alive"}))
	assert.Equal(t, len(s.Events), 4)

	assert.Check(t, is.Equal(s.Events[0].Name, "start"))
	assert.Check(t, s.Events[0].Terminated)

	d := s.Events[1]
	assert.Check(t, is.Equal(d.Data, "{\"text\":\n\"hi\"}"), "data lines join with a newline")
	assert.Check(t, is.Equal(d.DataLines, 2))

	st := s.Events[2]
	assert.Check(t, st.ID != nil && *st.ID == "7")
	assert.Check(t, st.Retry != nil && *st.Retry == "1000")
	assert.Check(t, is.Equal(st.Data, `{"name":"a"}`), "no space after the colon is fine")
	assert.Check(t, is.DeepEqual(st.Unknown, []string{"foo: bar"}))
	assert.Check(t, is.DeepEqual(st.Comments, []string{" note"}))

	last := s.Events[3]
	assert.Check(t, is.Equal(last.Name, "done"))
	assert.Check(t, !last.Terminated, "a final event with no blank line is not dispatched by a browser")
}

func TestParseSSEOnlyOneSpaceIsStripped(t *testing.T) {
	s := ParseSSE([]byte("event:  start\ndata:  x\n\n"), 1024)
	assert.Equal(t, s.Events[0].Name, " start")
	assert.Equal(t, s.Events[0].Data, " x")
}

func TestParseSSEBounded(t *testing.T) {
	s := ParseSSE([]byte("data: "+strings.Repeat("x", 5000)+"\n\n"), 1024)
	assert.Check(t, s.Err != nil)
	assert.Equal(t, len(s.Events), 0)
}

func TestParseSSEDropsOneLeadingBOM(t *testing.T) {
	s := ParseSSE([]byte("\uFEFFevent: start\ndata: {}\n\n"), 1024)
	assert.NilError(t, s.Err)
	assert.Equal(t, len(s.Events), 1)
	assert.Check(t, is.Equal(s.Events[0].Name, "start"))
	assert.Check(t, is.Len(s.Events[0].Unknown, 0))

	// Only one is dropped: a second makes the first field name unknown.
	s = ParseSSE([]byte("\uFEFF\uFEFFevent: start\ndata: {}\n\n"), 1024)
	assert.Equal(t, len(s.Events), 1)
	assert.Check(t, is.Equal(s.Events[0].Name, ""))
	assert.Check(t, is.DeepEqual(s.Events[0].Unknown, []string{"\uFEFFevent: start"}))
}
