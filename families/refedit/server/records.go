package server

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"qualkit/families/refedit/edit"
)

// Record is one line of the records file: one per edit request, success or failure.
// Fields that do not apply are null: input_sha256 before an image was read, prompt
// when none came, settings and output_sha256 unless the edit succeeded, ignored when
// no OpenAI field was ignored, error on success.
type Record struct {
	RequestID    string          `json:"request_id"`
	Time         string          `json:"time"`
	Route        string          `json:"route"`
	Status       int             `json:"status"`
	InputSHA256  *string         `json:"input_sha256"`
	Prompt       *PromptRecord   `json:"prompt"`
	Settings     *edit.Effective `json:"settings"`
	OutputSHA256 *string         `json:"output_sha256"`
	// Ignored are the OpenAI fields the request carried that cannot change the edit
	// (openai.go), with their values (an identifier's length only); null when none.
	Ignored map[string]string `json:"ignored"`
	Timing  Timing            `json:"timing"`
	Error   *string           `json:"error"`
}

// PromptRecord identifies a prompt without storing it whole: a record line stays short
// whatever the client sent.
type PromptRecord struct {
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
	Prefix string `json:"prefix"` // at most maxPromptPrefix bytes, cut at a character boundary
}

// maxPromptPrefix is how much of a prompt a record keeps.
const maxPromptPrefix = 200

func newPromptRecord(p string) *PromptRecord {
	return &PromptRecord{SHA256: edit.SHA256([]byte(p)), Bytes: len(p), Prefix: prefix(p, maxPromptPrefix)}
}

// Timing is where the time of one edit request went, in milliseconds: the wait for
// the worker, the edit call itself (decode + edit + encode), the CPU time the edit
// call's thread used (the work done, whatever else the host runs; 0 outside Linux), the
// whole handler.
type Timing struct {
	QueueMS   float64 `json:"queue_ms"`
	TaskMS    float64 `json:"task_ms"`
	TaskCPUMS float64 `json:"task_cpu_ms"`
	HandlerMS float64 `json:"handler_ms"`
}

// records writes whole lines under a lock, one Write per line, and flushes a
// buffered writer after each so a reader never sees half a record.
type records struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *records) write(rec Record) error {
	if r.w == nil {
		return nil
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("records: encode %s: %w", rec.RequestID, err)
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.w.Write(line); err != nil {
		return fmt.Errorf("records: write %s: %w", rec.RequestID, err)
	}
	if f, ok := r.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("records: flush %s: %w", rec.RequestID, err)
		}
	}
	return nil
}
