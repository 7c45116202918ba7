package qwenimage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseConfigReadsEveryVariable(t *testing.T) {
	cfg, err := ParseConfig(envOf(map[string]string{
		EnvCheckout:     "/src/trtmc",
		EnvImage:        "trtmc-serve:local",
		EnvDockerfile:   "docker/Dockerfile.serve",
		EnvHFCache:      "/models/hf",
		EnvHFHome:       "/ignored/because/QUALKIT_HF_CACHE/wins",
		EnvPython:       "/src/trtmc/.venv/bin/python",
		EnvHFPython:     "/opt/venv/bin/python",
		EnvRunProgram:   "/opt/venv/bin/trtmc",
		EnvServeProgram: "/opt/venv/bin/trtmc-server",
	}))
	require.NoError(t, err)
	assert.Equal(t, Config{
		Checkout: "/src/trtmc", Image: "trtmc-serve:local", Dockerfile: "docker/Dockerfile.serve", HFHome: "/models/hf",
		Python: "/src/trtmc/.venv/bin/python", HFPython: "/opt/venv/bin/python",
		RunProgram: "/opt/venv/bin/trtmc", ServeProgram: "/opt/venv/bin/trtmc-server",
		Timing: harness.TimingSource{Body: DefaultTimingBody},
	}, cfg)
	assert.Equal(t, "/src/trtmc/docker/Dockerfile.serve", cfg.DockerfilePath(), "a relative Dockerfile is inside the checkout")
}

func TestParseConfigDefaults(t *testing.T) {
	a := FromEnv(envOf(map[string]string{EnvCheckout: "/src/trtmc", "HOME": "/home/u"}))
	require.NoError(t, a.configErr)
	assert.Equal(t, Config{
		Checkout: "/src/trtmc", Dockerfile: "Dockerfile", HFHome: "/home/u/.cache/huggingface",
		Python: "/src/trtmc/.venv/bin/python", HFPython: "/src/trtmc/.venv/bin/python",
		RunProgram: "/src/trtmc/build/trtmc", ServeProgram: "trtmc-server",
		Timing: harness.TimingSource{Body: "trtmc_timing.model_call_ms"},
	}, a.Config)
	assert.Equal(t, "/src/trtmc/Dockerfile", a.Config.DockerfilePath())

	noCheckout := FromEnv(envOf(map[string]string{EnvHFPython: "/opt/venv/bin/python", "HOME": "/home/u"}))
	assert.Equal(t, "/opt/venv/bin/python", noCheckout.Config.Python, "without a checkout, pytest runs with the HF python")
}

func TestParseConfigHFCachePrecedence(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"QUALKIT_HF_CACHE first", map[string]string{EnvHFCache: "/a", EnvHFHome: "/b", "XDG_CACHE_HOME": "/c", "HOME": "/d"}, "/a"},
		{"then HF_HOME", map[string]string{EnvHFHome: "/b", "XDG_CACHE_HOME": "/c", "HOME": "/d"}, "/b"},
		{"then XDG_CACHE_HOME/huggingface", map[string]string{"XDG_CACHE_HOME": "/c", "HOME": "/d"}, "/c/huggingface"},
		{"then ~/.cache/huggingface", map[string]string{"HOME": "/d"}, "/d/.cache/huggingface"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig(envOf(tt.env))
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.HFHome)
		})
	}
	_, err := ParseConfig(envOf(nil))
	assert.ErrorContains(t, err, "no Hugging Face cache: set QUALKIT_HF_CACHE (or HF_HOME)")
}

func TestParseConfigRejectsRelativePathsAllAtOnce(t *testing.T) {
	_, err := ParseConfig(envOf(map[string]string{EnvCheckout: "../trtmc", EnvHFCache: "hf", EnvHFPython: "venv/bin/python", "HOME": "/h"}))
	require.Error(t, err)
	assert.ErrorContains(t, err, `QUALKIT_TRTMC_DIR=../trtmc is a relative path: go test runs in the package directory, so give an absolute one ("$PWD/../trtmc")`)
	assert.ErrorContains(t, err, "QUALKIT_HF_CACHE=hf is a relative path")
	assert.ErrorContains(t, err, "QUALKIT_TRTMC_HF_PYTHON=venv/bin/python is a relative path")
}

func TestTimingSourceSelection(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    harness.TimingSource
		wantErr string
	}{
		{"default: the response body", nil, harness.TimingSource{Body: "trtmc_timing.model_call_ms"}, ""},
		{"body path override", map[string]string{EnvTimingBody: "timing.task_ms"}, harness.TimingSource{Body: "timing.task_ms"}, ""},
		{"explicit body", map[string]string{EnvTimingSource: "body"}, harness.TimingSource{Body: "trtmc_timing.model_call_ms"}, ""},
		{"records with defaults", map[string]string{EnvTimingSource: "records"},
			harness.TimingSource{Records: "timing.model_call_ms", RecordID: "request_id"}, ""},
		{"records with overrides", map[string]string{EnvTimingSource: "Records", EnvTimingRecords: "observation.model_ms", EnvTimingID: "x_request_id"},
			harness.TimingSource{Records: "observation.model_ms", RecordID: "x_request_id"}, ""},
		{"a records path without choosing records", map[string]string{EnvTimingRecords: "timing.model_call_ms"},
			harness.TimingSource{Body: DefaultTimingBody}, "QUALKIT_TRTMC_TIMING_RECORDS or QUALKIT_TRTMC_TIMING_RECORD_ID is set but QUALKIT_TRTMC_TIMING_SOURCE is \"body\""},
		{"a body path with records chosen", map[string]string{EnvTimingSource: "records", EnvTimingBody: "x"},
			harness.TimingSource{Records: DefaultTimingRecords, RecordID: DefaultTimingRecordID}, "QUALKIT_TRTMC_TIMING_BODY is set but QUALKIT_TRTMC_TIMING_SOURCE=records"},
		{"an unknown source", map[string]string{EnvTimingSource: "header"},
			harness.TimingSource{Body: DefaultTimingBody}, `QUALKIT_TRTMC_TIMING_SOURCE="header": choose body or records`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HOME": "/h"}
			for k, v := range tt.env {
				env[k] = v
			}
			a := FromEnv(envOf(env))
			assert.Equal(t, tt.want, a.Timing())
			require.NoError(t, a.Timing().Validate(), "even a rejected configuration leaves a valid source")
			if tt.wantErr == "" {
				assert.NoError(t, a.configErr)
				return
			}
			assert.ErrorContains(t, a.configErr, tt.wantErr)
		})
	}
}

// The chosen source must read what a TRTMC server reports, in the body or in its records.
func TestTimingSourceReadsTRTMCShapes(t *testing.T) {
	body := FromEnv(envOf(map[string]string{"HOME": "/h"})).Timing()
	ms, err := body.FromBody([]byte(`{"created":1,"data":[{"b64_json":"iVBO"}],"trtmc_timing":{"queue_ms":0.2,"model_call_ms":22111.9,"handler_ms":22150.0}}`))
	require.NoError(t, err)
	assert.InDelta(t, 22111.9, ms, 1e-9)
	_, err = body.FromBody([]byte(`{"created":1,"data":[{"b64_json":"iVBO"}]}`))
	assert.ErrorContains(t, err, `field "trtmc_timing.model_call_ms" is absent`, "a server that does not report it must fail the timing join, not give 0")

	records := FromEnv(envOf(map[string]string{"HOME": "/h", EnvTimingSource: "records"})).Timing()
	path := t.TempDir() + "/records.jsonl"
	writeFile(t, path, `{"request_id":"r1","route":"/v1/images/edits","operation":"image_edit","backend":"trtmc","time":"t","timing":{"queue_ms":0.1,"model_call_ms":22100.5,"handler_ms":22130},"observation":{}}
{"request_id":"health","route":"/health/ready","timing":{}}
{"request_id":"r2","route":"/v1/images/edits","timing":{"model_call_ms":"22120.25"}}
`)
	got, err := records.FromRecords(path)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"r1": 22100.5, "r2": 22120.25}, got)
}
