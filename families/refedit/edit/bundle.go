// Package edit is the refedit editor: the bundle format (the compiled edit program),
// settings parsing shared by the HTTP server and the CLI, instruction matching, and the
// pixel pipeline (decode, resize, edit, guidance blend, quantize, PNG encode).
//
// It owns every number the edits use, but only through the bundle: the built-in values
// live in the builder (builder.go) and the apply path reads them from a loaded Program.
// It knows nothing about HTTP, flags or files other than the bundle it loads.
package edit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// The bundle file format this package writes and reads.
const (
	Format = "refedit-bundle"
	// FormatVersion 2 added the checkpoint the bundle was built from.
	FormatVersion = 2
	// Precision is the arithmetic of the pixel pipeline, reported in every result.
	Precision = "fp32"
)

// Bundle is the compiled edit program as it is stored on disk. Its canonical JSON
// (Encode) is what the sha256 identifies, so field order and types are part of the format.
type Bundle struct {
	Format         string `json:"format"`
	Version        int    `json:"version"`
	BuilderVersion string `json:"builder_version"`
	// Checkpoint is the checkpoint the bundle was built from; the server names it in
	// GET /v1/models, so a row is held to what it really serves.
	Checkpoint string     `json:"checkpoint"`
	Precision  string     `json:"precision"`
	Defaults   Defaults   `json:"defaults"`
	Limits     Limits     `json:"limits"`
	Edits      []EditSpec `json:"edits"`
}

// Defaults are the settings a request gets for the fields it leaves out.
// Width and Height 0 mean "the input image's size".
type Defaults struct {
	Width             int     `json:"width"`
	Height            int     `json:"height"`
	NumInferenceSteps int     `json:"num_inference_steps"`
	GuidanceScale     float64 `json:"guidance_scale"`
	Seed              uint64  `json:"seed"`
}

// Limits bound the settings and the input image.
type Limits struct {
	MaxPixels            int     `json:"max_pixels"`
	MaxSide              int     `json:"max_side"`
	MaxNumInferenceSteps int     `json:"max_num_inference_steps"`
	MaxGuidanceScale     float64 `json:"max_guidance_scale"`
}

// EditSpec is one edit: the keywords that select it and the operation it runs.
type EditSpec struct {
	Name     string   `json:"name"`
	Keywords []string `json:"keywords"`
	Op       Op       `json:"op"`
}

// Op kinds. Each uses only the Op fields named next to it.
const (
	OpAffine    = "affine"     // Matrix, Offset: out = Matrix * rgb + Offset
	OpGamma     = "gamma"      // Exponent: out = x ^ Exponent
	OpPosterize = "posterize"  // Levels: q = min(floor(x*Levels), Levels-1); out = q/(Levels-1)
	OpRemap     = "remap"      // FlipX, FlipY: mirror columns and/or rows
	OpBoxBlur   = "box_blur"   // Kernel: num_inference_steps passes, rows then columns
	OpUnsharp   = "unsharp"    // Kernel, Passes, Amount: B + Amount*(B - blur(B))
	OpBlockMean = "block_mean" // Block: Block x Block cells replaced by their mean
	OpGrain     = "grain"      // Amplitude: x + Amplitude*(u - 0.5), u from the seed
)

// Op holds the parameters of one operation; fields a kind does not use stay zero
// and are left out of the JSON.
type Op struct {
	Kind      string         `json:"kind"`
	Matrix    *[3][3]float64 `json:"matrix,omitempty"`
	Offset    *[3]float64    `json:"offset,omitempty"`
	Exponent  float64        `json:"exponent,omitempty"`
	Levels    int            `json:"levels,omitempty"`
	FlipX     bool           `json:"flip_x,omitempty"`
	FlipY     bool           `json:"flip_y,omitempty"`
	Kernel    []float64      `json:"kernel,omitempty"`
	Passes    int            `json:"passes,omitempty"`
	Amount    float64        `json:"amount,omitempty"`
	Block     int            `json:"block,omitempty"`
	Amplitude float64        `json:"amplitude,omitempty"`
}

// Encode validates the bundle and returns its canonical JSON: two-space indented,
// fields in declaration order, shortest float form, one trailing newline.
func (b Bundle) Encode() ([]byte, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := newBundleEncoder(&buf).Encode(b); err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	return buf.Bytes(), nil
}

// newBundleEncoder is the one JSON encoder configuration of the canonical form.
func newBundleEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc
}

// Validate reports the first thing that would stop the bundle from loading.
func (b Bundle) Validate() error {
	_, err := compile(b)
	return err
}

// SHA256 is the hex sha256 of bundle bytes: the bundle's identity.
func SHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
