package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"os"
	"strings"
	"time"

	"qualkit/families/refedit/edit"
	"qualkit/families/refedit/server"
)

const runSynopsis = "run BUNDLE --image IN --prompt P [--size WxH] [--seed S] [--num-inference-steps N] [--guidance-scale G] --output OUT.png [--fault NAME]\n" +
	"  refedit run BUNDLE --batch ITEMS.jsonl --report REPORT.jsonl [--wait-items D] [--fault NAME] [--leak-state]"

// runReport is the one JSON line `refedit run` prints.
type runReport struct {
	Backend      string         `json:"backend"`
	BundleSHA256 string         `json:"bundle_sha256"`
	Image        string         `json:"image"`
	InputSHA256  string         `json:"input_sha256"`
	Output       string         `json:"output"`
	OutputSHA256 string         `json:"output_sha256"`
	Settings     edit.Effective `json:"settings"`
	// Timing has the server's task_ms: the edit call (decode + edit + encode) only.
	Timing map[string]float64 `json:"timing"`
	Fault  string             `json:"fault,omitempty"`
}

// cmdRun is the native Task (editFile). Settings flags stay strings so they go through
// the same parser as the form.
func cmdRun(args []string, stdout, stderr io.Writer) error {
	c := newCommand("run", runSynopsis, stderr)
	fs := c.fs
	imagePath := fs.String("image", "", "reference image `IN` (PNG or JPEG, required)")
	prompt := fs.String("prompt", "", "the edit instruction (required)")
	output := fs.String("output", "", "write the edited PNG to `OUT.png` (required)")
	settingFlags := map[string]*string{}
	for _, field := range edit.SettingFields() {
		settingFlags[field] = fs.String(flagName(field), "", "the "+field+" form field (default: the bundle's)")
	}
	batch := fs.String("batch", "", "run every edit of `ITEMS.jsonl` (one JSON object per line: id, image, prompt, settings, output) after one load")
	report := fs.String("report", "", "with --batch: write the load and one line per edit to `REPORT.jsonl`")
	waitItems := fs.Duration("wait-items", 0, "with --batch: load the bundle first, then wait up to `D` for ITEMS to appear (a preloaded batch); the report's first line adds waited_ms and items_read_at")
	leak := fs.Bool("leak-state", false, "with --batch: carry state from one edit to the next (a deliberately broken batch for a negative control)")
	faultFlag := addFaultFlags(fs, false, server.TaskFaultNames())
	positional, err := c.parse(args)
	if err != nil {
		return err
	}
	fault, err := faultFlag.parse("run", c.given(), true)
	if err != nil {
		return err
	}
	if *batch != "" || *report != "" || *leak || *waitItems != 0 {
		given := c.given()
		for _, single := range []string{"image", "prompt", "output"} {
			if given[single] {
				return usagef("run", "--%s is for one edit; with --batch every edit's comes from ITEMS", single)
			}
		}
		switch {
		case len(positional) != 1:
			return usagef("run", "want exactly one BUNDLE argument, got %d (%q)", len(positional), positional)
		case *batch == "" || *report == "":
			return usagef("run", "--batch ITEMS and --report REPORT go together")
		}
		return runBatch(positional[0], *batch, *report, *waitItems, fault, *leak, stdout, stderr)
	}
	switch {
	case len(positional) != 1:
		return usagef("run", "want exactly one BUNDLE argument, got %d (%q)", len(positional), positional)
	case *imagePath == "":
		return usagef("run", "--image IN is required: the reference image")
	case *prompt == "":
		return usagef("run", "--prompt P is required: the edit instruction")
	case *output == "":
		return usagef("run", "--output OUT.png is required: where to write the edit")
	}
	given := c.given()
	fields := map[string]string{}
	for field, v := range settingFlags {
		if given[flagName(field)] {
			fields[field] = *v
		}
	}

	if fault.On() {
		fmt.Fprintf(stderr, "refedit: %s\n", faultBanner("run", fault))
	}
	p, err := edit.Load(positional[0])
	if err != nil {
		return err
	}
	res, img, taskMS, err := editFile(p, fault, *imagePath, *prompt, fields, func(err error) error { return flagError("run", err) })
	if err != nil {
		return err
	}
	if err := writeFileAtomic(*output, res.PNG); err != nil {
		return err
	}
	line, err := json.Marshal(runReport{
		Backend:      "refedit",
		BundleSHA256: p.SHA256(),
		Image:        *imagePath,
		InputSHA256:  edit.SHA256(img),
		Output:       *output,
		OutputSHA256: res.OutputSHA256,
		Settings:     res.Settings,
		Timing:       map[string]float64{"task_ms": taskMS},
		Fault:        fault.String(),
	})
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", line)
	return err
}

// editFile is one edit as `refedit run` does it, alone or in a batch: the server's path
// (ParseSettings, Match, Apply) minus HTTP; bad reports a bad setting or prompt.
func editFile(p *edit.Program, fault server.Fault, image, prompt string, fields map[string]string, bad func(error) error) (edit.Result, []byte, float64, error) {
	settings, err := p.ParseSettings(fields)
	if err != nil {
		return edit.Result{}, nil, 0, bad(err)
	}
	chosen, err := p.Match(prompt)
	if err != nil {
		return edit.Result{}, nil, 0, bad(err)
	}
	img, err := os.ReadFile(image)
	if err != nil {
		return edit.Result{}, nil, 0, fmt.Errorf("read image: %w", err)
	}
	start := time.Now()
	res, err := fault.Apply(p, img, chosen, settings)
	if err != nil {
		return edit.Result{}, nil, 0, fmt.Errorf("edit %s: %w", image, err)
	}
	return res, img, msSince(start), nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// flagName is a form field's flag: num_inference_steps -> num-inference-steps.
func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

// flagError turns the editor's complaint about a field into a usage error naming
// the flag the user typed.
func flagError(cmd string, err error) error {
	var ie *edit.InputError
	if errors.As(err, &ie) {
		return usagef(cmd, "--%s: %s", flagName(ie.Param), ie.Message)
	}
	return err
}

// batchItem is one line of --batch ITEMS (family.NativeItem).
type batchItem struct {
	ID       string            `json:"id"`
	Image    string            `json:"image"`
	Prompt   string            `json:"prompt"`
	Settings map[string]string `json:"settings"`
	Output   string            `json:"output"`
}

// batchLine is one edit's line of --report; the first line is {"load_ms": ...}.
type batchLine struct {
	ID           string         `json:"id"`
	Output       string         `json:"output"`
	OutputSHA256 string         `json:"output_sha256"`
	TaskMS       float64        `json:"task_ms"`
	Settings     edit.Effective `json:"settings"`
}

// runBatch is the native Task for many edits after one load: each item goes through
// editFile, with nothing kept from one item to the next unless leak asks for it. With
// waitItems the bundle is loaded first and ITEMS is then polled for (the harness writes
// it whole, by rename): a batch preloaded beside the server.
func runBatch(bundle, itemsPath, reportPath string, waitItems time.Duration, fault server.Fault, leak bool, stdout, stderr io.Writer) error {
	if fault.On() {
		fmt.Fprintf(stderr, "refedit: %s\n", faultBanner("run", fault))
	}
	if leak {
		fmt.Fprintln(stderr, "refedit: FAULT INJECTION ON: refedit run --batch --leak-state carries state from one edit to the next. A deliberately broken batch for a negative control: never qualify it.")
	}
	head := batchHead{}
	var items []batchItem
	var err error
	if waitItems == 0 {
		if items, err = readItems(itemsPath); err != nil {
			return err
		}
	}
	start := time.Now()
	p, err := edit.Load(bundle)
	if err != nil {
		return err
	}
	head.LoadMS = msSince(start)
	if waitItems > 0 {
		fmt.Fprintf(stdout, "refedit: batch loaded in %.1f ms; waiting up to %s for %s\n", head.LoadMS, waitItems, itemsPath)
		t0 := time.Now()
		if err := waitFor(itemsPath, waitItems); err != nil {
			return err
		}
		if items, err = readItems(itemsPath); err != nil {
			return err
		}
		waited := msSince(t0)
		head.WaitedMS, head.ItemsReadAt = &waited, time.Now().UTC().Format(time.RFC3339Nano)
	}
	rep, err := os.Create(reportPath)
	if err != nil {
		return err
	}
	defer rep.Close()
	enc := json.NewEncoder(rep)
	if err := enc.Encode(head); err != nil {
		return err
	}
	var previous []byte
	for i, it := range items {
		res, _, taskMS, err := editFile(p, fault, it.Image, it.Prompt, it.Settings, func(err error) error { return err })
		if err != nil {
			return fmt.Errorf("item %d (%s): %w", i+1, it.ID, err)
		}
		if leak && previous != nil {
			if res.PNG, err = carryOver(res.PNG, previous); err != nil {
				return fmt.Errorf("item %d (%s): %w", i+1, it.ID, err)
			}
			res.OutputSHA256 = edit.SHA256(res.PNG)
		}
		previous = res.PNG
		if err := writeFileAtomic(it.Output, res.PNG); err != nil {
			return err
		}
		if err := enc.Encode(batchLine{ID: it.ID, Output: it.Output, OutputSHA256: res.OutputSHA256, TaskMS: taskMS, Settings: res.Settings}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "refedit: batch %d/%d %s: %s (%.1f ms)\n", i+1, len(items), it.ID, res.OutputSHA256[:12], taskMS)
	}
	return rep.Close()
}

// batchHead is --report's first line.
type batchHead struct {
	LoadMS      float64  `json:"load_ms"`
	WaitedMS    *float64 `json:"waited_ms,omitempty"`
	ItemsReadAt string   `json:"items_read_at,omitempty"`
}

// waitFor polls for path until it exists or d has passed.
func waitFor(path string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("--wait-items: %s did not appear within %s", path, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readItems(path string) ([]batchItem, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--batch: %w", err)
	}
	var items []batchItem
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var it batchItem
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&it); err != nil {
			return nil, fmt.Errorf("--batch %s line %d: %w", path, i+1, err)
		}
		if it.ID == "" || it.Image == "" || it.Prompt == "" || it.Output == "" {
			return nil, fmt.Errorf("--batch %s line %d: id, image, prompt and output are required", path, i+1)
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("--batch %s: no items", path)
	}
	return items, nil
}

// carryOver is the leaking batch's fault: the previous edit's output leaks into this
// one (pixel (0,0) takes a red level derived from it), as state a batch must not keep.
func carryOver(out, previous []byte) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	img := image.NewNRGBA(src.Bounds())
	draw.Draw(img, img.Bounds(), src, src.Bounds().Min, draw.Src)
	img.Pix[0] += 1 + previous[len(previous)/2]%7
	var buf bytes.Buffer
	err = png.Encode(&buf, img)
	return buf.Bytes(), err
}
