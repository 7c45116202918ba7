package latents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The noise is NumPy's, bit for bit: golden.json holds the sha256 of
// default_rng(seed).standard_normal(shape, float32) for each case, as NumPy computes it
// (testdata/test_numpy_latents.py, whose pytest holds the file to NumPy). The 4-million-value
// cases reach the ziggurat's tail and its rejection branch.
func TestNoiseIsNumPys(t *testing.T) {
	b, err := os.ReadFile("testdata/golden.json")
	require.NoError(t, err)
	var cases []struct {
		Seed   uint64 `json:"seed"`
		Shape  []int  `json:"shape"`
		SHA256 string `json:"sha256"`
	}
	require.NoError(t, json.Unmarshal(b, &cases))
	require.NotEmpty(t, cases)
	for _, c := range cases {
		raw, err := Raw(c.Seed, c.Shape...)
		require.NoError(t, err)
		sum := sha256.Sum256(raw)
		assert.Equal(t, c.SHA256, hex.EncodeToString(sum[:]), "seed %d, shape %v", c.Seed, c.Shape)
	}
}

// The first values of seed 42, as NumPy prints them: a failure here says where.
func TestFirstValues(t *testing.T) {
	assert.Equal(t, []float32{0.14190717, -1.6685079, -1.332108, 0.58255345, 0.3740366}, Normal(42, 5))
	g := newPCG64(42)
	assert.Equal(t, []uint64{0xc621fbcd16d92688, 0x705a5661a791ffc1, 0xdbcd12c26eda1624}, []uint64{g.next64(), g.next64(), g.next64()},
		"PCG64's raw stream (bit_generator.random_raw)")
}

// perf-serve's Qwen-Image layout and the case's own draw the same count, hence the same
// bytes: (1, 1, 16, 128, 128) for a 1024x1024 request of the checkpoint
// (transformer in_channels 64, vae temperal_downsample of three entries).
func TestQwenImageShape(t *testing.T) {
	shape, err := QwenImageShape(64, 3, 1024, 1024)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1, 16, 128, 128}, shape)
	a, err := Raw(42, shape...)
	require.NoError(t, err)
	b, err := Raw(42, 16, 128, 128)
	require.NoError(t, err)
	assert.Equal(t, a, b)
	_, err = QwenImageShape(0, 3, 1024, 1024)
	assert.Error(t, err)
	_, err = Raw(1, 0, 4)
	assert.ErrorContains(t, err, "every dimension must be positive")
}
