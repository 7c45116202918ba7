package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every route answers errors in the JSON shape, 404 and 405 included, with Allow.
func TestEveryRouteAnswersJSONErrors(t *testing.T) {
	s, _ := newTestServer(t, nil)
	for _, tt := range []struct {
		method, path string
		status       int
		allow        string
		message      string
	}{
		{http.MethodGet, "/nope", 404, "", `no route "GET" "/nope"`},
		{http.MethodPost, "/v1/images/generations", 404, "", "routes: POST /v1/images/edits"},
		{http.MethodGet, EditRoute, 405, "POST", "method \"GET\" is not allowed on /v1/images/edits; use POST"},
		{http.MethodDelete, "/health/ready", 405, "GET, HEAD", "not allowed on /health/ready"},
		{http.MethodPost, "/v1/models", 405, "GET, HEAD", "not allowed on /v1/models"},
	} {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		req.Header.Set(RequestIDHeader, "probe-1")
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, req)
		require.Equal(t, tt.status, rr.Code, "%s %s", tt.method, tt.path)
		assert.Equal(t, "application/json", rr.Header().Get("Content-Type"), "%s %s", tt.method, tt.path)
		assert.Equal(t, tt.allow, rr.Header().Get("Allow"))
		e := decodeError(t, rr)
		assert.Contains(t, e.Error.Message, tt.message)
		assert.Equal(t, "probe-1", e.RequestID)
	}
}

// A body built for another boundary than the one Content-Type declares has no part the
// server can see: the answer says so, not that the prompt is missing.
func TestMalformedMultipartSaysSo(t *testing.T) {
	s, _ := newTestServer(t, nil)
	body, _ := multipartBody(t, standardParts(testPNG(t, 8, 8), "invert")...)
	req := httptest.NewRequest(http.MethodPost, EditRoute, body)
	req.Header.Set("Content-Type", "multipart/form-data; boundary=not-the-one-used")
	rr := httptest.NewRecorder()
	s.ServeHTTP(rr, req)
	require.Equal(t, 400, rr.Code)
	e := decodeError(t, rr)
	assert.Contains(t, e.Error.Message, `malformed multipart body: no part delimited by the boundary "not-the-one-used"`)
	assert.NotContains(t, e.Error.Message, "prompt is required")
}

// A record keeps a prompt's hash, length and first 200 bytes, never the prompt whole.
func TestRecordsKeepABoundedPrompt(t *testing.T) {
	s, recs := newTestServer(t, nil)
	prompt := strings.Repeat("é", 10000) + " invert"
	rr := postEdit(t, s, "long-prompt", standardParts(testPNG(t, 8, 8), prompt)...)
	require.Equal(t, 200, rr.Code, rr.Body.String())
	line := strings.TrimSpace(bufferText(recs))
	assert.Less(t, len(line), 2000, "one record line stays short")
	var rec Record
	require.NoError(t, json.Unmarshal([]byte(line), &rec))
	require.NotNil(t, rec.Prompt)
	assert.Equal(t, len(prompt), rec.Prompt.Bytes)
	assert.Equal(t, strings.Repeat("é", 100), rec.Prompt.Prefix, "200 bytes, cut between characters")
	assert.Len(t, rec.Prompt.SHA256, 64)
}

// A client that sends its headers and then trickles its body gets 408 once the body
// timeout passes, and loses its connection; the server answers others meanwhile.
func TestSlowBodyTimesOut(t *testing.T) {
	s, recs := newTestServer(t, func(c *Config) { c.BodyTimeout = 300 * time.Millisecond })
	srv := httptest.NewServer(s)
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	body, ct := multipartBody(t, standardParts(testPNG(t, 8, 8), "invert")...)
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nX-Request-ID: slow-1\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", EditRoute, ct, body.Len())
	_, err = conn.Write(body.Bytes()[:50]) // then nothing more
	require.NoError(t, err)

	// Meanwhile a normal request is served.
	fast, fastCT := multipartBody(t, standardParts(testPNG(t, 8, 8), "invert")...)
	resp, err := http.Post(srv.URL+EditRoute, fastCT, fast)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)

	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	slow, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(slow.Body)
	assert.Equal(t, http.StatusRequestTimeout, slow.StatusCode, string(b))
	assert.Contains(t, string(b), "did not arrive within the server's body timeout")
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, bufferText(recs), `"request_id":"slow-1","time"`)
}

// A body whose Content-Length overstates it gets a 400 that says so once the body
// timeout passes, not a 200 after the connection's drain (issue 27).
func TestBodyShorterThanItsContentLength(t *testing.T) {
	s, _ := newTestServer(t, func(c *Config) { c.BodyTimeout = 300 * time.Millisecond })
	srv := httptest.NewServer(s)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	body, ct := multipartBody(t, standardParts(testPNG(t, 8, 8), "invert")...)
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nX-Request-ID: short-1\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", EditRoute, ct, body.Len()+1000)
	_, err = conn.Write(body.Bytes()) // the whole form, 1000 bytes short of what it declared
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	assert.Contains(t, string(b), "the request body is 1000 bytes shorter than its Content-Length")
	assert.Less(t, time.Since(start), 5*time.Second)
}

// A body of more than a buffer with no boundary line, a missing code and HTML-escaped
// text: the three other error faults issue 27 found, each answered plainly now.
func TestErrorsSayWhatIsWrongPlainly(t *testing.T) {
	s, _ := newTestServer(t, nil)
	req := httptest.NewRequest(http.MethodPost, EditRoute, strings.NewReader(strings.Repeat("x", 8000)))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=abc")
	rr := httptest.NewRecorder()
	s.ServeHTTP(rr, req)
	assert.Equal(t, http.StatusBadRequest, rr.Code)
	assert.Contains(t, rr.Body.String(), "malformed multipart body: no part delimited by the boundary")
	assert.NotContains(t, rr.Body.String(), "buffer full")
	var e struct {
		Error struct{ Code, Type string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &e))
	assert.Equal(t, "invalid_request", e.Error.Code, "OpenAI's code field")

	rr = httptest.NewRecorder()
	writeError(rr, "id", badRequest("", "size must be <= 2048 & > 0"))
	assert.Contains(t, rr.Body.String(), `"message":"size must be <= 2048 & > 0"`, "no HTML escaping")
	assert.Contains(t, rr.Body.String(), `"code":"invalid_request"`)
}
