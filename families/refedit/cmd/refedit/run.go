package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"qualkit/families/refedit/edit"
)

const runSynopsis = "run BUNDLE --image IN --prompt P [--size WxH] [--seed S] [--num-inference-steps N] [--guidance-scale G] --output OUT.png [--fault NAME]\n" +
	"       run BUNDLE --batch ITEMS.jsonl --report REPORT.jsonl [--wait-items D] [--fault NAME] [--leak-state]"

// runReport is the one JSON line `refedit run` prints.
type runReport struct {
	Backend      string         `json:"backend"`
	BundleSHA256 string         `json:"bundle_sha256"`
	Image        string         `json:"image"`
	InputSHA256  string         `json:"input_sha256"`
	Output       string         `json:"output"`
	OutputSHA256 string         `json:"output_sha256"`
	Settings     edit.Effective `json:"settings"`
	Timing       runTiming      `json:"timing"`
	Fault        string         `json:"fault,omitempty"`
}

// runTiming has the server's task_ms: the edit call (decode + edit + encode) only.
type runTiming struct {
	TaskMS float64 `json:"task_ms"`
}

// cmdRun is the native Task: the server's path (ParseSettings, Match, Apply) minus
// HTTP. Settings flags stay strings so they go through the same parser as the form.
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
	faultFlag := addFaultFlags(fs, false, taskFaults())
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
	settings, err := p.ParseSettings(fields)
	if err != nil {
		return flagError("run", err)
	}
	chosen, err := p.Match(*prompt)
	if err != nil {
		return flagError("run", err)
	}
	img, err := os.ReadFile(*imagePath)
	if err != nil {
		return fmt.Errorf("read image: %w", err)
	}
	start := time.Now()
	res, err := fault.Apply(p, img, chosen, settings)
	taskMS := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return fmt.Errorf("edit %s: %w", *imagePath, err)
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
		Timing:       runTiming{TaskMS: taskMS},
		Fault:        fault.String(),
	})
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", line)
	return err
}

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
