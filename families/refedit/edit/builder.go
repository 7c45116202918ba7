package edit

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
		Edits: builtinEdits(),
	}
}

func builtinEdits() []EditSpec {
	return []EditSpec{
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
