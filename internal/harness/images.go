package harness

import "qualkit/internal/wire"

// ResponsePNG extracts the edited image from an OpenAI-style images response body.
// AIPerf counts any 2xx JSON object as a success, so the harness checks content itself.
func ResponsePNG(body []byte) ([]byte, error) {
	return wire.OpenAI{}.Output(body, "", nil)
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
