package trtmcdouble

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The checkpoint and profile the double plays.
const (
	HFID       = "Qwen/Qwen-Image-Edit-2511"
	Revision   = "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9"
	Profile    = "qwen-image-edit-2511"
	Family     = "qwen_image"
	TRTVersion = "11.1.0.106"
	// Marker is the key, set to true, in every JSON document the double writes.
	Marker = "qualkit_contract_double"
	// BundleCreatedAt is fixed, so that two builds of the same inputs give the same bytes.
	BundleCreatedAt = "2000-01-01T00:00:00Z"
)

// bundleMagic opens every bundle (TRTMC's src/bundle/bundle_format.h): "BUNDLE", format
// version 1, a reserved byte. A uint64 little-endian header length follows.
var bundleMagic = []byte("BUNDLE\x01\x00")

const maxBundleHeader = 1 << 20

// BundleHeader is the JSON header of a double's bundle: TRTMC's keys, the double's values.
type BundleHeader struct {
	ModelID           string    `json:"model_id"`
	ModelType         string    `json:"model_type"`
	Family            string    `json:"family"`
	Precision         string    `json:"precision"`
	TRTVersion        string    `json:"trt_version"`
	GPUName           string    `json:"gpu_name"`
	CreatedAt         string    `json:"created_at"`
	MaxCacheLength    int       `json:"max_cache_length"`
	RuntimeStrategy   string    `json:"runtime_strategy"`
	ConditionWidth    int       `json:"condition_width"`
	ConditionHeight   int       `json:"condition_height"`
	ConditionSHA256   string    `json:"condition_image_sha256"`
	ImageHeight       int       `json:"image_height"`
	ImageWidth        int       `json:"image_width"`
	NumInferenceSteps int       `json:"num_inference_steps"`
	Revision          string    `json:"revision"`
	Double            bool      `json:"qualkit_contract_double"`
	Sections          []Section `json:"sections"`
}

// Section is a payload section; Offset is from the payload's start.
type Section struct {
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
}

type BundleSpec struct {
	Precision         string
	MaxCacheLength    int
	ImageWidth        int
	ImageHeight       int
	NumInferenceSteps int
	Revision          string
	// Condition is the build's condition image, hashed into the bundle; nil when none.
	Condition []byte
}

// NewBundleHeader is the header of the bundle built for spec, Sections left to EncodeBundle.
func NewBundleHeader(spec BundleSpec) (BundleHeader, error) {
	h := BundleHeader{
		ModelID: HFID, ModelType: "qwen_image_edit", Family: Family,
		Precision: spec.Precision, TRTVersion: TRTVersion,
		GPUName: "qualkit contract double (no GPU)", CreatedAt: BundleCreatedAt,
		MaxCacheLength: spec.MaxCacheLength, RuntimeStrategy: "diffusion_qwen_image",
		ImageHeight: spec.ImageHeight, ImageWidth: spec.ImageWidth,
		NumInferenceSteps: spec.NumInferenceSteps, Revision: spec.Revision, Double: true,
	}
	if spec.Condition != nil {
		w, hgt, err := imageSize(spec.Condition)
		if err != nil {
			return BundleHeader{}, fmt.Errorf("condition image: %w", err)
		}
		sum := sha256.Sum256(spec.Condition)
		h.ConditionWidth, h.ConditionHeight, h.ConditionSHA256 = w, hgt, fmt.Sprintf("%x", sum)
	}
	return h, nil
}

// EncodeBundle is the bundle file for h; the payload derives from the header, so equal
// inputs give equal files.
func EncodeBundle(h BundleHeader) ([]byte, error) {
	payload, err := bundlePayload(h)
	if err != nil {
		return nil, err
	}
	h.Sections = []Section{{Offset: 0, Size: int64(len(payload))}}
	header, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(bundleMagic)
	_ = binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.Write(header)
	b.Write(payload)
	return b.Bytes(), nil
}

// WriteBundle writes the bundle for h at path.
func WriteBundle(path string, h BundleHeader) error {
	b, err := EncodeBundle(h)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// ReadBundle reads and validates a double's bundle.
func ReadBundle(path string) (BundleHeader, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return BundleHeader{}, err
	}
	return DecodeBundle(b)
}

// DecodeBundle validates a bundle file and returns its header; it accepts only what
// EncodeBundle writes.
func DecodeBundle(b []byte) (BundleHeader, error) {
	if len(b) < 16 || !bytes.Equal(b[:8], bundleMagic) {
		return BundleHeader{}, errors.New("no BUNDLE magic")
	}
	n := binary.LittleEndian.Uint64(b[8:16])
	if n > maxBundleHeader || n > uint64(len(b)-16) {
		return BundleHeader{}, fmt.Errorf("header length %d does not fit the %d-byte file", n, len(b))
	}
	var h BundleHeader
	dec := json.NewDecoder(bytes.NewReader(b[16 : 16+n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return BundleHeader{}, fmt.Errorf("header: %w", err)
	}
	payload := b[16+n:]
	switch {
	case !h.Double:
		return BundleHeader{}, fmt.Errorf("header has no %q: true: not a bundle of the qualkit contract double", Marker)
	case h.ModelID != HFID || h.ModelType != "qwen_image_edit" || h.Family != Family:
		return BundleHeader{}, fmt.Errorf("bundle of %s (%s, %s), not of %s", h.ModelID, h.ModelType, h.Family, HFID)
	case len(h.Sections) != 1 || h.Sections[0].Offset != 0 || h.Sections[0].Size != int64(len(payload)):
		return BundleHeader{}, fmt.Errorf("sections %v do not cover the %d-byte payload", h.Sections, len(payload))
	}
	want, err := bundlePayload(h)
	if err != nil {
		return BundleHeader{}, err
	}
	if !bytes.Equal(payload, want) {
		return BundleHeader{}, errors.New("payload does not match the header")
	}
	return h, nil
}

func bundlePayload(h BundleHeader) ([]byte, error) {
	h.Sections = nil
	seed, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	b := []byte("qualkit contract double bundle payload: no engines inside\n")
	block := sha256.Sum256(seed)
	for range 8 {
		b = append(b, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return b, nil
}
