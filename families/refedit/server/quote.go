package server

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxQuoted is the most of a client's text an error message or a record repeats: a
// message about a 1 MiB field name stays a few hundred bytes.
const maxQuoted = 64

// quoteBounded quotes s, or its first maxQuoted bytes (cut at a character boundary) and
// how long the whole was.
func quoteBounded(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(prefix(s, maxQuoted)), len(s))
}

// prefix is at most n bytes of s, cut at a character boundary so it stays valid UTF-8
// where s was.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
