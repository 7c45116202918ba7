package trtmcdouble

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Floats as Python's repr spells them (the values were checked with python3's json.dumps).
func TestPyFloat(t *testing.T) {
	for f, want := range map[float64]string{4: "4.0", -1: "-1.0", 0.25: "0.25", 0.1: "0.1", 1e-4: "0.0001", 1e-5: "1e-05",
		1.5e-7: "1.5e-07", 1e15: "1000000000000000.0", 1e16: "1e+16", 1.5e16: "1.5e+16", 123456789.125: "123456789.125",
		1796492228.7580285: "1796492228.7580285", math.Copysign(0, -1): "-0.0", math.Inf(1): "Infinity", math.NaN(): "NaN"} {
		assert.Equal(t, json.Number(want), pyFloat(f), "%v", f)
	}
}

// What perf-serve writes back of what it decoded is spelled by Python.
func TestDecodeOrderedSpellsNumbersAsPython(t *testing.T) {
	v, err := decodeOrdered([]byte(`{"b":4.50,"a":[1E2,-0,7,2.0e-5]}`))
	require.NoError(t, err)
	b, err := marshalPlain(v)
	require.NoError(t, err)
	assert.Equal(t, `{"b":4.5,"a":[100.0,0,7,2e-05]}`, string(b), "keys in their order, numbers as json.dumps(json.loads(...))")
}

func TestPyDumps(t *testing.T) {
	v := pairs("prompt", "café <&> \U0001F600", "n", json.Number("1"), "list", []any{json.Number("2.5"), "a,b: c"}, "empty", newObject())
	b, err := pyDumps(v, false)
	require.NoError(t, err)
	assert.Equal(t, `{"prompt": "caf\u00e9 <&> \ud83d\ude00", "n": 1, "list": [2.5, "a,b: c"], "empty": {}}`, string(b),
		"json.dumps: ', ' and ': ' between tokens (not inside strings), ensure_ascii, nothing escaped for HTML")
	b, err = pyDumps(v, true)
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"prompt\": \"caf\\u00e9 <&> \\ud83d\\ude00\",\n  \"n\": 1,\n  \"list\": [\n    2.5,\n    \"a,b: c\"\n  ],\n  \"empty\": {}\n}", string(b),
		"json.dumps(indent=2)")
}

func TestPyRepr(t *testing.T) {
	for s, want := range map[string]string{"abc\n": `'abc\n'`, "it's": `"it's"`, `it's "x"`: `'it\'s "x"'`, "a\\b\t\x01": `'a\\b\t\x01'`, "é": `'é'`} {
		assert.Equal(t, want, pyRepr(s), s)
	}
}
