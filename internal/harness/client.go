package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sort"
)

// EditRequest sends one image edit the way AIPerf 0.13.0 does: prompt, model,
// response_format, n, one file part "image", then every setting as a text field.
func EditRequest(ctx context.Context, client *http.Client, url, model, prompt string, image []byte, settings map[string]string, requestID string) (int, []byte, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fields := [][2]string{{"prompt", prompt}, {"model", model}, {"response_format", "b64_json"}, {"n", "1"}}
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	fw, err := mw.CreateFormFile("image", "image.png")
	if err != nil {
		return 0, nil, err
	}
	fw.Write(image)
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		mw.WriteField(k, settings[k])
	}
	mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/images/edits", &body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Request-ID", requestID)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s/v1/images/edits: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	return resp.StatusCode, b, err
}
