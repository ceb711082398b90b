package report

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":                  "plain text",
		"§4.4 — ok":                   "§4.4 — ok",
		"a\tb":                        "a b",
		"a\nb\r":                      `a\nb\r`,
		"\x00\x1b[0m\x7f":             `\x00\x1b[0m\x7f`,
		"bad \xff\xfe utf8":           `bad \xff\xfe utf8`,
		"c1 \u0085 bidi \u202e":       `c1 \u0085 bidi \u202e`,
		"sep \u2028\u2029 isol\u2066": `sep \u2028\u2029 isol\u2066`,
	} {
		assert.Equal(t, clean(in), want, "clean(%q)", in)
	}
}

func TestClip(t *testing.T) {
	assert.Equal(t, clip("abcdef", 4), "abc…")
	assert.Equal(t, clip("ab", 4), "ab")
	assert.Equal(t, clip("§§§§§", 3), "§§…")
	assert.Equal(t, clip("abc", 0), "abc")
}

func TestXMLSafe(t *testing.T) {
	assert.Equal(t, xmlSafe("ok\n\t\r"), "ok\n\t\r")
	assert.Equal(t, xmlSafe("a\x00b\x1bc\xffd\uFFFEe"), "a\uFFFDb\uFFFDc\uFFFDd\uFFFDe")
}

func TestTextExcerpt(t *testing.T) {
	assert.Equal(t, textExcerpt([]byte("short\n"), 10), "short\n")
	assert.Equal(t, textExcerpt([]byte("abc€def"), 4), "abc …")
	assert.Equal(t, textExcerpt([]byte("ab\xffcdef"), 4), "ab\xffc …")
}
