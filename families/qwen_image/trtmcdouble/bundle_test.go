package trtmcdouble

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBundleRoundTrip(t *testing.T) {
	h, err := NewBundleHeader(adapterSpec(t))
	require.NoError(t, err)
	b, err := EncodeBundle(h)
	require.NoError(t, err)

	assert.Equal(t, []byte("BUNDLE\x01\x00"), b[:8])
	n := binary.LittleEndian.Uint64(b[8:16])
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b[16:16+n], &raw))
	assert.Equal(t, true, raw[Marker])
	assert.Equal(t, HFID, raw["model_id"])
	assert.Equal(t, "qwen_image_edit", raw["model_type"])
	assert.Equal(t, "diffusion_qwen_image", raw["runtime_strategy"])
	assert.Equal(t, BundleCreatedAt, raw["created_at"])
	assert.Equal(t, []any{map[string]any{"offset": 0.0, "size": float64(len(b) - 16 - int(n))}}, raw["sections"])
	assert.Greater(t, len(b)-16-int(n), 200, "a few hundred payload bytes")

	got, err := DecodeBundle(b)
	require.NoError(t, err)
	assert.Equal(t, 640, got.ConditionWidth)
	assert.Equal(t, 382, got.ConditionHeight)
	assert.Equal(t, 1024, got.ImageWidth)
	assert.Equal(t, Revision, got.Revision)
	assert.Equal(t, "bf16", got.Precision)
	assert.Equal(t, TRTVersion, got.TRTVersion)
	assert.True(t, got.Double)

	again, err := EncodeBundle(h)
	require.NoError(t, err)
	assert.Equal(t, b, again, "the same inputs give the same bytes")

	other := adapterSpec(t)
	other.Precision = "fp16"
	h2, err := NewBundleHeader(other)
	require.NoError(t, err)
	b2, err := EncodeBundle(h2)
	require.NoError(t, err)
	assert.NotEqual(t, b[16+n:], b2[16+binary.LittleEndian.Uint64(b2[8:16]):], "the payload depends on the inputs")
}

func TestWriteAndReadBundle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", Profile+".bundle")
	h := writeTestBundle(t, path, adapterSpec(t))
	assert.Equal(t, 20, h.NumInferenceSteps)
	_, err := ReadBundle(filepath.Join(t.TempDir(), "absent.bundle"))
	assert.Error(t, err)
}

func TestNewBundleHeaderRejectsABadConditionImage(t *testing.T) {
	spec := adapterSpec(t)
	spec.Condition = []byte("GIF89a not an image we take")
	_, err := NewBundleHeader(spec)
	assert.ErrorContains(t, err, "neither PNG nor JPEG")
}

func TestDecodeBundleRejects(t *testing.T) {
	h, err := NewBundleHeader(adapterSpec(t))
	require.NoError(t, err)
	good, err := EncodeBundle(h)
	require.NoError(t, err)
	n := int(binary.LittleEndian.Uint64(good[8:16]))

	withHeader := func(mutate func(map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good[16:16+n], &m))
		mutate(m)
		hdr, err := json.Marshal(m)
		require.NoError(t, err)
		var b bytes.Buffer
		b.Write(good[:8])
		require.NoError(t, binary.Write(&b, binary.LittleEndian, uint64(len(hdr))))
		b.Write(hdr)
		b.Write(good[16+n:])
		return b.Bytes()
	}
	tampered := bytes.Clone(good)
	tampered[len(tampered)-1] ^= 0xff
	hugeLen := bytes.Clone(good)
	binary.LittleEndian.PutUint64(hugeLen[8:16], 1<<40)

	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"not a bundle":     {[]byte("just some text, long enough to hold a header"), "no BUNDLE magic"},
		"too short":        {good[:10], "no BUNDLE magic"},
		"header too long":  {hugeLen, "does not fit"},
		"truncated":        {good[:16+n-5], "does not fit"},
		"no marker":        {withHeader(func(m map[string]any) { m[Marker] = false }), "not a bundle of the qualkit contract double"},
		"other model":      {withHeader(func(m map[string]any) { m["model_id"] = "Qwen/Qwen-Image" }), "not of " + HFID},
		"unknown key":      {withHeader(func(m map[string]any) { m["engine"] = "x" }), "unknown field"},
		"sections":         {withHeader(func(m map[string]any) { m["sections"] = []any{} }), "do not cover"},
		"payload tampered": {tampered, "payload does not match"},
		"header edited":    {withHeader(func(m map[string]any) { m["precision"] = "fp32" }), "payload does not match"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeBundle(tc.b)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestBuildRequestTakesTheEditSizeAsTheCondition: the families case builds its edit
// bundle at the test photo's size (test_e2e.py @ f0a1b69f § _build), which TRTMC's
// builder takes as the condition image's size, keeping the 1024x1024 output (model.py @
// b40c8184 § build); without a size it refuses.
func TestBuildRequestTakesTheEditSizeAsTheCondition(t *testing.T) {
	src := shapedCheckout(t, LayoutFamilies)
	hf := t.TempDir()
	snapshot, err := HFCache(hf)
	require.NoError(t, err)
	r := newRunner(t, src)
	bundle := filepath.Join(t.TempDir(), Profile+".bundle")
	request := func(size string) string {
		return writeFile(t, filepath.Join(t.TempDir(), "request.json"), `{"model_dir": "`+snapshot+`", "output_path": "`+bundle+
			`", "family": "qwen_image", "task": "image_edit", "precision": "bf16", "tensor_parallel_size": 1`+size+`}`)
	}
	res := r.run("tensorrt-model-connect", "build-request", request(`, "image_height": 382, "image_width": 640`))
	require.Equal(t, 0, res.code, res.stderr)
	h, err := ReadBundle(bundle)
	require.NoError(t, err)
	assert.Equal(t, [2]int{1024, 1024}, [2]int{h.ImageWidth, h.ImageHeight}, "the output geometry stays the bundle's default")
	assert.Equal(t, [2]int{640, 382}, [2]int{h.ConditionWidth, h.ConditionHeight})

	res = r.run("tensorrt-model-connect", "build-request", request(""))
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "Qwen-Image Edit requires image_height and image_width for the condition image")
}
