package report

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// clean makes one line of untrusted text safe to print: bytes that are not
// UTF-8 become \xNN, and control characters (C0, DEL, C1), line and
// paragraph separators and bidirectional controls become visible escapes,
// so a hostile runner cannot move the cursor, recolour a terminal, forge a
// line of the report or reorder what a reader sees. A tab becomes a space.
func clean(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteByte(' ')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// plain reports whether s needs no cleaning.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			if c >= 0x80 {
				return plainUnicode(s[i:])
			}
			return false
		}
	}
	return true
}

func plainUnicode(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r < 0x20 || r == 0x7f || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// lines splits untrusted multi-line text into cleaned lines, dropping a
// trailing empty line.
func lines(s string) []string {
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if s == "" {
		return nil
	}
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = clean(p)
	}
	return parts
}

// firstLine is the first line of s, cleaned, at most max runes.
func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(clean(strings.TrimRight(s, "\r")), max)
}

// clip shortens s to at most max runes, marking the cut with "…".
func clip(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// xmlSafe replaces everything XML 1.0 does not allow in a document (most C0
// controls, U+FFFE, U+FFFF, invalid UTF-8) with U+FFFD. encoding/xml does the
// same when it escapes; doing it here too keeps the guarantee local.
func xmlSafe(s string) string {
	ok := true
	for _, r := range s {
		if !xmlChar(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !xmlChar(r) {
			b.WriteRune('\uFFFD')
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		(r >= 0x20 && r <= 0xD7FF) ||
		(r >= 0xE000 && r <= 0xFFFD) ||
		(r >= 0x10000 && r <= 0x10FFFF)
}

// Clean, FirstLine and Lines are the cleaning every writer applies to text
// from the runner, for the writers in other packages (report/github,
// report/markdown): Clean makes one line safe to print, FirstLine is the
// first line of s cleaned and cut to max runes (0: uncut), and Lines splits
// multi-line text into cleaned lines.
func Clean(s string) string { return clean(s) }

// FirstLine: see Clean.
func FirstLine(s string, max int) string { return firstLine(s, max) }

// Lines: see Clean.
func Lines(s string) []string { return lines(s) }

// Clip shortens s to at most max runes, marking the cut with "…" (max 0
// keeps s whole).
func Clip(s string, max int) string { return clip(s, max) }
