// Package edit is the refedit editor: the bundle format, settings parsing, instruction
// matching and the pixel pipeline. Every number the edits use is written once, in Build,
// and the apply path reads it from a loaded Program; HTTP and flags are not its concern.
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
	if _, err := compile(b); err != nil {
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

// SHA256 is the hex sha256 of bundle bytes: the bundle's identity.
func SHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Version is the builder version written into every bundle (and the CLI's version).
const Version = "0.1.0"

// Checkpoint is the one checkpoint the builder builds: its built-in edit table.
const Checkpoint = "qualkit/refedit-v1"

// BuiltinDefaults are the request defaults of a bundle built without overrides.
func BuiltinDefaults() Defaults {
	return Defaults{NumInferenceSteps: 4, GuidanceScale: 1.0, Seed: 0}
}

// Build compiles the built-in edit table with the given request defaults into a
// bundle. This is the one place the edit constants are written down; everything
// downstream reads them from the bundle. Call Encode (which validates) to store it.
func Build(d Defaults) Bundle {
	return Bundle{
		Format:         Format,
		Version:        FormatVersion,
		BuilderVersion: Version,
		Checkpoint:     Checkpoint,
		Precision:      Precision,
		Defaults:       d,
		Limits: Limits{
			MaxPixels:            2048 * 2048,
			MaxSide:              8192,
			MaxNumInferenceSteps: 100,
			MaxGuidanceScale:     3,
		},
		Edits: []EditSpec{
			{"grayscale", []string{"grayscale", "greyscale", "black and white", "monochrome"},
				affine([3][3]float64{{0.299, 0.587, 0.114}, {0.299, 0.587, 0.114}, {0.299, 0.587, 0.114}}, [3]float64{})},
			{"sepia", []string{"sepia", "vintage"},
				affine([3][3]float64{{0.393, 0.769, 0.189}, {0.349, 0.686, 0.168}, {0.272, 0.534, 0.131}}, [3]float64{})},
			{"invert", []string{"invert", "negative"},
				affine([3][3]float64{{-1, 0, 0}, {0, -1, 0}, {0, 0, -1}}, [3]float64{1, 1, 1})},
			// (x - 0.5) * 1.5 + 0.5 written as 1.5 x - 0.25.
			{"contrast", []string{"contrast"},
				affine([3][3]float64{{1.5, 0, 0}, {0, 1.5, 0}, {0, 0, 1.5}}, [3]float64{-0.25, -0.25, -0.25})},
			{"warm", []string{"warm"},
				affine([3][3]float64{{1.15, 0, 0}, {0, 1.0, 0}, {0, 0, 0.80}}, [3]float64{})},
			{"brighten", []string{"brighten", "brighter", "lighten"}, Op{Kind: OpGamma, Exponent: 0.625}},
			{"posterize", []string{"posterize", "posterise"}, Op{Kind: OpPosterize, Levels: 4}},
			{"rotate", []string{"rotate", "upside down"}, Op{Kind: OpRemap, FlipX: true, FlipY: true}},
			{"mirror", []string{"mirror", "flip horizontally", "horizontal flip"}, Op{Kind: OpRemap, FlipX: true}},
			{"flip", []string{"flip vertically", "vertical flip"}, Op{Kind: OpRemap, FlipY: true}},
			{"blur", []string{"blur", "soften"}, Op{Kind: OpBoxBlur, Kernel: meanKernel3()}},
			{"sharpen", []string{"sharpen"}, Op{Kind: OpUnsharp, Kernel: meanKernel3(), Passes: 1, Amount: 1.0}},
			{"pixelate", []string{"pixelate", "pixelize", "pixelise", "mosaic"}, Op{Kind: OpBlockMean, Block: 16}},
			{"grain", []string{"grain", "noise"}, Op{Kind: OpGrain, Amplitude: 0.16}},
		},
	}
}

func affine(m [3][3]float64, offset [3]float64) Op {
	return Op{Kind: OpAffine, Matrix: &m, Offset: &offset}
}

// meanKernel3 is the 3-tap mean [1/3 1/3 1/3]; a fresh slice so edits never share one.
func meanKernel3() []float64 {
	third := 1.0 / 3.0
	return []float64{third, third, third}
}
