// Package batch drives TRTMC's persistent worker for the identity stage's native replays
// (cmd/trtmcbatch). It maps each replay's HTTP settings to the worker's request fields,
// and the worker's replies to the harness's batch report.
package batch

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"qualkit/families/qwen_image/latents"
	"regexp"
	"strconv"
	"strings"
)

// Options say what to run; Checkpoint is the snapshot whose configs give a latent
// seed's noise shape.
type Options struct {
	Worker, Bundle, RuntimeRoot, Items, Report, Checkpoint string
}

// Item is one replay (family.NativeItem).
type Item struct {
	ID         string            `json:"id"`
	Image      string            `json:"image"`
	Prompt     string            `json:"prompt"`
	Settings   map[string]string `json:"settings"`
	LatentSeed *int64            `json:"latent_seed"`
	Output     string            `json:"output"`
}

// Request maps a replay to the worker's request object, every setting under the
// worker's name; a setting with none is an error (dropped, the runs would differ).
func Request(it Item) (map[string]any, error) {
	req := map[string]any{"prompt": it.Prompt, "image_path": it.Image}
	for k, v := range it.Settings {
		var err error
		switch k {
		case "negative_prompt":
			req["negative_prompt"] = v
		case "seed":
			req["seed"], err = strconv.ParseInt(v, 10, 64)
		case "num_inference_steps":
			req["num_steps"], err = strconv.Atoi(v)
		case "guidance_scale":
			req["guidance_scale"], err = strconv.ParseFloat(v, 64)
		case "true_cfg_scale":
			req["cfg_scale"], err = strconv.ParseFloat(v, 64)
		case "size":
			w, h, ok := strings.Cut(v, "x")
			var wi, hi int
			if wi, err = strconv.Atoi(w); ok && err == nil {
				hi, err = strconv.Atoi(h)
			}
			if !ok || wi <= 0 || hi <= 0 {
				err = fmt.Errorf("not WxH")
			}
			req["width"], req["height"] = wi, hi
		default:
			return nil, fmt.Errorf("replay %s: setting %q has no field in the worker's request", it.ID, k)
		}
		if err != nil {
			return nil, fmt.Errorf("replay %s: setting %s=%q: %v", it.ID, k, v, err)
		}
	}
	return req, nil
}

var safeID = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Run starts the worker, sends every replay, and writes the report.
func Run(o Options, log io.Writer) error {
	if o.Worker == "" || o.Bundle == "" || o.RuntimeRoot == "" || o.Items == "" || o.Report == "" {
		return errors.New("--worker, --bundle, --runtime-root, --items and --report are required")
	}
	items, err := readItems(o.Items)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(o.Report), ".trtmc-batch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	session, _ := json.Marshal(map[string]any{"schema_version": 2, "bundle": o.Bundle, "runtime_root": o.RuntimeRoot,
		"operation": "generate_image", "request": map[string]any{}, "expected_family": "qwen_image", "expected_task": "image_edit"})
	sessionPath := filepath.Join(dir, "session.json")
	if err := os.WriteFile(sessionPath, session, 0o644); err != nil {
		return err
	}
	cmd := exec.Command(o.Worker, "--serve", sessionPath)
	cmd.Stderr = log
	in, err := cmd.StdinPipe()
	outPipe, err2 := cmd.StdoutPipe()
	if err = errors.Join(err, err2); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", o.Worker, err)
	}
	defer cmd.Process.Kill()
	out := bufio.NewScanner(outPipe)
	out.Buffer(make([]byte, 1<<20), 1<<26)
	next := func() (map[string]any, error) {
		for out.Scan() {
			var m map[string]any
			if json.Unmarshal(out.Bytes(), &m) == nil {
				return m, nil
			}
			fmt.Fprintf(log, "worker: %s\n", out.Text()) // not a protocol line
		}
		if err := out.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("the worker closed its output")
	}
	ready, err := next()
	if err != nil {
		return fmt.Errorf("the worker's ready line: %w", err)
	}
	if ready["event"] != "ready" {
		return fmt.Errorf("the worker did not start: %v", ready)
	}
	loadMs, _ := ready["load_ms"].(float64)
	rep, err := os.Create(o.Report)
	if err != nil {
		return err
	}
	defer rep.Close()
	enc := json.NewEncoder(rep)
	if err := enc.Encode(map[string]any{"load_ms": loadMs, "worker": ready}); err != nil {
		return err
	}
	for n, it := range items {
		req, err := Request(it)
		if err != nil {
			return err
		}
		base := filepath.Join(dir, fmt.Sprintf("%03d-%s", n, safeID.ReplaceAllString(it.ID, "_")))
		var latentsSHA string
		if it.LatentSeed != nil {
			if latentsSHA, err = writeLatents(o.Checkpoint, *it.LatentSeed, req, base+".initial_latents.f32"); err != nil {
				return fmt.Errorf("replay %s: %w", it.ID, err)
			}
			req["initial_latents_path"] = base + ".initial_latents.f32"
		}
		line, _ := json.Marshal(map[string]any{"id": it.ID, "request": req, "artifact_base": base, "full_observation": false})
		if _, err := in.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("replay %s: write to the worker: %w", it.ID, err)
		}
		reply, err := next()
		if err != nil {
			return fmt.Errorf("replay %s: %w", it.ID, err)
		}
		if reply["id"] != it.ID || reply["ok"] != true {
			return fmt.Errorf("replay %s: the worker answered %v", it.ID, reply)
		}
		obs, _ := reply["observation"].(map[string]any)
		taskMs, _ := obs["runtime_e2e_wall_ms"].(float64)
		// benchmark_worker.cpp names the image <artifact_base>.image.<iteration>.<index>.png.
		png, err := os.ReadFile(base + ".image.1.0.png")
		if err != nil {
			return fmt.Errorf("replay %s: the worker's image: %w", it.ID, err)
		}
		if err := os.WriteFile(it.Output, png, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(png)
		done := map[string]any{"id": it.ID, "output": it.Output, "output_sha256": hex.EncodeToString(sum[:]), "task_ms": taskMs}
		if latentsSHA != "" {
			done["latents_sha256"] = latentsSHA
		}

		if err := enc.Encode(done); err != nil {
			return err
		}
		fmt.Fprintf(log, "trtmc-batch: %d/%d %s: %x (%.1f ms)\n", n+1, len(items), it.ID, sum[:6], taskMs)
	}
	shutdown, _ := json.Marshal(map[string]any{"id": "shutdown", "type": "shutdown"})
	if _, err := in.Write(append(shutdown, '\n')); err != nil {
		return err
	}
	if _, err := next(); err != nil {
		return fmt.Errorf("the worker's shutdown reply: %w", err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("the worker: %w", err)
	}
	return rep.Close()
}

// writeLatents draws a replay's noise as perf-serve does for latent_seed (latents.py @
// d3e1a549 § Replay) and returns its sha256.
func writeLatents(checkpoint string, seed int64, req map[string]any, path string) (string, error) {
	h, _ := req["height"].(int)
	w, _ := req["width"].(int)
	shape, err := latents.CheckpointShape(checkpoint, h, w)
	if err != nil {
		return "", err
	}
	if seed < 0 {
		return "", fmt.Errorf("latent seed %d is negative", seed)
	}
	raw, err := latents.Raw(uint64(seed), shape...)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

func readItems(path string) ([]Item, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var items []Item
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var it Item
		if err := json.Unmarshal([]byte(l), &it); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		items = append(items, it)
	}
	return items, nil
}

// Build compiles the driver into out, static, for the image's Linux.
func Build(root, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./families/qwen_image/cmd/trtmcbatch")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build trtmc-batch: %v: %s", err, b)
	}
	return nil
}
