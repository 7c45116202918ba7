package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"os"
	"time"

	"qualkit/families/refedit/edit"
	"qualkit/families/refedit/server"
)

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

// runBatch is the native Task for many edits after one load: the bundle is loaded once,
// then every item goes through exactly what `refedit run` does for one (ParseSettings,
// Match, Apply), with nothing kept from one item to the next unless leak asks for it.
//
// With waitItems the bundle is loaded first and ITEMS is waited for (polled every 20 ms
// for up to waitItems; the harness writes it whole, by rename): a batch preloaded beside
// the server. The report's first line then adds waited_ms and items_read_at.
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
	head.LoadMS = float64(time.Since(start).Microseconds()) / 1000
	if waitItems > 0 {
		fmt.Fprintf(stdout, "refedit: batch loaded in %.1f ms; waiting up to %s for %s\n", head.LoadMS, waitItems, itemsPath)
		t0 := time.Now()
		if err := waitFor(itemsPath, waitItems); err != nil {
			return err
		}
		if items, err = readItems(itemsPath); err != nil {
			return err
		}
		now := time.Now()
		waited := float64(now.Sub(t0).Microseconds()) / 1000
		head.WaitedMS, head.ItemsReadAt = &waited, now.UTC().Format(time.RFC3339Nano)
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
		settings, err := p.ParseSettings(it.Settings)
		if err != nil {
			return fmt.Errorf("item %d (%s): %w", i+1, it.ID, err)
		}
		chosen, err := p.Match(it.Prompt)
		if err != nil {
			return fmt.Errorf("item %d (%s): %w", i+1, it.ID, err)
		}
		img, err := os.ReadFile(it.Image)
		if err != nil {
			return fmt.Errorf("item %d (%s): read image: %w", i+1, it.ID, err)
		}
		t0 := time.Now()
		res, err := fault.Apply(p, img, chosen, settings)
		taskMS := float64(time.Since(t0).Microseconds()) / 1000
		if err != nil {
			return fmt.Errorf("item %d (%s): edit %s: %w", i+1, it.ID, it.Image, err)
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

// batchHead is --report's first line: the load, and for a batch that waited for its
// items, how long it waited and when it read them.
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
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var it batchItem
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&it); err != nil {
			return nil, fmt.Errorf("--batch %s line %d: %w", path, n, err)
		}
		if it.ID == "" || it.Image == "" || it.Prompt == "" || it.Output == "" {
			return nil, fmt.Errorf("--batch %s line %d: id, image, prompt and output are required", path, n)
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("--batch %s: no items", path)
	}
	return items, sc.Err()
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
