package batch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary plays the worker when QUALKIT_FAKE_WORKER names how it behaves:
// "ok", "failed" (the session does not load), "refuse" (a request answers ok:false).
func TestMain(m *testing.M) {
	if mode := os.Getenv("QUALKIT_FAKE_WORKER"); mode != "" {
		os.Exit(fakeWorker(mode))
	}
	os.Exit(m.Run())
}

func fakeWorker(mode string) int {
	if len(os.Args) != 3 || os.Args[1] != "--serve" {
		fmt.Fprintln(os.Stderr, "want --serve SESSION.json")
		return 2
	}
	if _, err := os.ReadFile(os.Args[2]); err != nil {
		return 2
	}
	if mode == "failed" {
		fmt.Println(`{"event":"failed","error":"no bundle"}`)
		return 1
	}
	fmt.Println("loading the engines") // not a protocol line
	fmt.Println(`{"event":"ready","load_ms":1234.5}`)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var line struct {
			ID           string         `json:"id"`
			Type         string         `json:"type"`
			Request      map[string]any `json:"request"`
			ArtifactBase string         `json:"artifact_base"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return 3
		}
		if line.Type == "shutdown" {
			fmt.Printf(`{"id":%q,"ok":true}`+"\n", line.ID)
			return 0
		}
		if mode == "refuse" {
			fmt.Printf(`{"id":%q,"ok":false,"error":"out of memory"}`+"\n", line.ID)
			continue
		}
		// The "image" is the prompt and seed, so a test can tell the replays apart.
		body := fmt.Sprintf("%v/%v", line.Request["prompt"], line.Request["seed"])
		if err := os.WriteFile(line.ArtifactBase+".image.1.0.png", []byte(body), 0o644); err != nil {
			return 4
		}
		fmt.Printf(`{"id":%q,"ok":true,"observation":{"runtime_e2e_wall_ms":21.5}}`+"\n", line.ID)
	}
	return 0
}

func TestRequestMapsEverySettingToTheWorkersField(t *testing.T) {
	req, err := Request(Item{ID: "r1", Image: "/in.png", Prompt: "Make it snow", Settings: map[string]string{
		"negative_prompt": " ", "seed": "42", "num_inference_steps": "20", "guidance_scale": "4.0",
		"true_cfg_scale": "4.0", "size": "1024x768",
	}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"prompt": "Make it snow", "image_path": "/in.png", "negative_prompt": " ",
		"seed": int64(42), "num_steps": 20, "guidance_scale": 4.0, "cfg_scale": 4.0, "width": 1024, "height": 768}, req)
}

func TestRequestRefusesWhatTheWorkerCannotTake(t *testing.T) {
	for setting, msg := range map[string]string{
		"strength=0.5":     `setting "strength" has no field`,
		"seed=x":           "setting seed=",
		"size=1024":        "not WxH",
		"size=0x5":         "not WxH",
		"guidance_scale=a": "guidance_scale",
	} {
		k, v, _ := strings.Cut(setting, "=")
		_, err := Request(Item{ID: "r", Prompt: "p", Image: "/i", Settings: map[string]string{k: v}})
		assert.ErrorContains(t, err, msg, setting)
	}
}

// run drives the fake worker over two replays and returns the report's lines.
func run(t *testing.T, mode string) ([]map[string]any, error) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("QUALKIT_FAKE_WORKER", mode)
	items := filepath.Join(dir, "items.jsonl")
	var b strings.Builder
	for i, id := range []string{"req-a", "req/b"} {
		json.NewEncoder(&b).Encode(Item{ID: id, Image: "/in.png", Prompt: "edit " + id,
			Settings: map[string]string{"seed": fmt.Sprint(i)}, Output: filepath.Join(dir, fmt.Sprintf("out-%d.png", i))})
	}
	require.NoError(t, os.WriteFile(items, []byte(b.String()), 0o644))
	report := filepath.Join(dir, "report.jsonl")
	var log strings.Builder
	err := Run(Options{Worker: os.Args[0], Bundle: "/b.bundle", RuntimeRoot: "/rt", Items: items, Report: report}, &log)
	var lines []map[string]any
	if data, rerr := os.ReadFile(report); rerr == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m))
			lines = append(lines, m)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".trtmc-batch-*"))
	assert.Empty(t, left, "the worker's session and artifacts are removed")
	return lines, err
}

func TestRunWritesTheReportFromOneWorker(t *testing.T) {
	lines, err := run(t, "ok")
	require.NoError(t, err)
	require.Len(t, lines, 3)
	assert.Equal(t, 1234.5, lines[0]["load_ms"])
	for i, id := range []string{"req-a", "req/b"} {
		l := lines[i+1]
		assert.Equal(t, id, l["id"])
		assert.Equal(t, 21.5, l["task_ms"])
		out, err := os.ReadFile(l["output"].(string))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("edit %s/%d", id, i), string(out))
		assert.Len(t, l["output_sha256"], 64)
	}
}

func TestRunFailsLoudly(t *testing.T) {
	_, err := run(t, "failed")
	assert.ErrorContains(t, err, "the worker did not start")
	lines, err := run(t, "refuse")
	assert.ErrorContains(t, err, "replay req-a: the worker answered")
	assert.Len(t, lines, 1, "only the load line")
	assert.ErrorContains(t, Run(Options{}, nil), "are required")
}
