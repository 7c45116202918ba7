package server

import (
	"crypto/rand"
	"fmt"
)

// RequestIDHeader is honoured when present and echoed in the header, the body and
// the records file.
const RequestIDHeader = "X-Request-ID"

// maxRequestID bounds an honoured id; longer ones are replaced, like malformed ones.
const maxRequestID = 200

// requestID returns the client's id when it is 1..200 visible ASCII characters, else
// a fresh UUIDv4 (the form AIPerf sends).
func requestID(given string) string {
	if len(given) > 0 && len(given) <= maxRequestID && visibleASCII(given) {
		return given
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func visibleASCII(s string) bool {
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
