package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

// Send sends one edit over proto, byte for byte as AIPerf would, with X-Request-ID set,
// and returns the status and body.
func Send(ctx context.Context, client *http.Client, proto wire.Protocol, url, model string, req wire.Request, requestID string) (int, []byte, error) {
	body, ctype, err := proto.Encode(model, req)
	if err != nil {
		return 0, nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url+proto.Route(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	hr.Header.Set("Content-Type", ctype)
	hr.Header.Set("X-Request-ID", requestID)
	resp, err := client.Do(hr)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s%s: %w", url, proto.Route(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	return resp.StatusCode, b, err
}

// proto is how the row's requests travel: the family's protocol, else wire.OpenAI.
func (r *row) proto() wire.Protocol {
	if r.spec.Wire != nil {
		return r.spec.Wire
	}
	return wire.OpenAI{}
}

// sent is what a recorded request carried, read through the row's protocol.
func (r *row) sent(rec RawRecord) (wire.Request, error) {
	req, err := r.proto().Decode(rec.Payload)
	if err != nil {
		return req, fmt.Errorf("request %s: %w", rec.Metadata.XRequestID, err)
	}
	return req, nil
}

// output is the PNG a response names, read through the row's protocol.
func (r *row) output(body []byte, requestID string) ([]byte, error) {
	return r.proto().Output(body, requestID, r.readScratch)
}

// readScratch reads a file the server wrote inside its scratch folder.
func (r *row) readScratch(rel string) ([]byte, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("%q is not a file inside the server's scratch folder", rel)
	}
	return os.ReadFile(filepath.Join(r.ev.Path(schema.ScratchDir), filepath.FromSlash(rel)))
}
