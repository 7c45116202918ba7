package harness

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/judge"
	"qualkit/internal/schema"
)

// FakeBatch is the fake family with a batch native mode. Mode says how the batch
// behaves: "ok"; "none" (no batch for this row: the harness runs one-shot replays);
// "leak" (each replay carries a pixel of the previous one's output); "short" (the
// report lacks the last replay); "crash" (it exits 1 after the first replay).
//
// Preload makes it wait for its items (Spec.BatchWaits): with NativeBatchSpec.WaitItems
// it "loads", then waits.
type FakeBatch struct {
	FakeFamily
	Mode    string
	Preload bool
}

func (f FakeBatch) Describe(env family.Env, row family.Row) (family.Spec, error) {
	spec, err := f.FakeFamily.Describe(env, row)
	if f.Mode != "none" {
		spec.NativeBatch = f.NativeBatch
	}
	spec.BatchWaits = f.Preload
	return spec, err
}

func (f FakeBatch) NativeBatch(_ family.Env, spec family.NativeBatchSpec) (family.Command, error) {
	c := f.program("native-batch")
	c.Env = append(c.Env, "QUALKIT_FAKE_BATCH="+f.Mode)
	args := []string{"-bundle", spec.Bundle, "-items", spec.Items, "-report", spec.Report}
	if spec.WaitItems > 0 {
		args = append(args, "-wait-items", spec.WaitItems.String())
	}
	return f.with(c, args...), nil
}

// FakeEarly is FakeBatch whose server lists the model only once ready: AIPerf starts
// with the server in the overlapped order.
type FakeEarly struct{ FakeBatch }

func (f FakeEarly) Describe(env family.Env, row family.Row) (family.Spec, error) {
	spec, err := f.FakeBatch.Describe(env, row)
	spec.ModelsWhenReady = "fakeServe's /v1/models"
	return spec, err
}

// fakeNativeBatch plays a batch native Task: one "load", then fakeEdit per item.
func fakeNativeBatch(args []string) error {
	fs := flag.NewFlagSet("native-batch", flag.ContinueOnError)
	items, report := fs.String("items", "", ""), fs.String("report", "", "")
	wait := fs.Duration("wait-items", 0, "")
	fs.String("bundle", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mode := os.Getenv("QUALKIT_FAKE_BATCH")
	head := map[string]any{"load_ms": 12.5}
	if *wait > 0 {
		t0 := time.Now()
		for {
			if _, err := os.Stat(*items); err == nil {
				break
			}
			if time.Since(t0) > *wait {
				return fmt.Errorf("%s did not appear within %s", *items, *wait)
			}
			time.Sleep(10 * time.Millisecond)
		}
		head["waited_ms"] = float64(time.Since(t0).Microseconds()) / 1000
		head["items_read_at"] = time.Now().UTC()
	}
	in, err := os.ReadFile(*items)
	if err != nil {
		return err
	}
	rep, err := os.Create(*report)
	if err != nil {
		return err
	}
	defer rep.Close()
	enc := json.NewEncoder(rep)
	enc.Encode(head)
	var all []family.NativeItem
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var it family.NativeItem
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			return err
		}
		all = append(all, it)
	}
	var previous byte
	for n, it := range all {
		if mode == "short" && n == len(all)-1 {
			break
		}
		if mode == "crash" && n == 1 {
			return fmt.Errorf("crashed on purpose after one replay")
		}
		data, err := os.ReadFile(it.Image)
		if err != nil {
			return err
		}
		w, h, err := fakeSize(it.Settings["size"])
		if err != nil {
			return err
		}
		png, err := fakeEdit(data, w, h, os.Getenv("QUALKIT_FAKE_FAULT"))
		if err != nil {
			return err
		}
		if mode == "leak" && n > 0 {
			img, _ := judge.DecodePNG(png)
			nrgba := judge.ToNRGBA(img)
			nrgba.Pix[0] ^= previous | 1
			var buf bytes.Buffer
			pngEncode(&buf, nrgba)
			png = buf.Bytes()
		}
		previous = png[len(png)/2]
		if err := os.WriteFile(it.Output, png, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(png)
		enc.Encode(map[string]any{"id": it.ID, "output": it.Output, "output_sha256": hex.EncodeToString(sum[:]), "task_ms": 1.5})
	}
	return nil
}

// A batch native mode runs every replay in one process and must give the same pixels as
// the server; one that leaks state between replays, loses a replay or dies fails
// identity; a family without a batch for the row falls back to one process per replay.
func TestIdentityBatchMode(t *testing.T) {
	for _, tc := range []struct {
		mode, wantMode, msg string
	}{
		{"ok", schema.NativeBatch, ""},
		{"none", schema.NativeOneShot, ""},
		{"leak", schema.NativeBatch, "native and HTTP outputs differ"},
		{"short", schema.NativeBatch, "has no line for it"},
		{"crash", schema.NativeBatch, "the batch failed before this replay"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			p := newPipeline(t, false)
			c := p.row("batch", "")
			c.Adapter = FakeBatch{Mode: tc.mode}
			s := p.start(t)
			res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
			require.NotNil(t, res.Identity, "%+v", res.Stages)
			assert.Equal(t, tc.wantMode, res.Identity.Mode)
			st, _ := res.Stage(schema.StageIdentity)
			if tc.msg == "" {
				require.NoError(t, err)
				assert.Equal(t, schema.StatusQualified, res.Status, res.Reason)
				assert.Equal(t, 4, res.Identity.PixelMatches)
				require.NotNil(t, res.TimeBudget)
				wantLoads := 4
				if tc.wantMode == schema.NativeBatch {
					wantLoads = 1
					assert.Equal(t, 12.5, res.Identity.LoadMs)
					assert.FileExists(t, filepath.Join(s.Evidence.Dir, "batch", schema.NativeBatchFile))
				}
				assert.Equal(t, wantLoads, res.TimeBudget.NativeLoads)
				return
			}
			require.Error(t, err)
			assert.Equal(t, schema.Fail, st.Status)
			assert.Contains(t, st.Error, tc.msg)
			if tc.mode == "leak" {
				assert.Equal(t, 1, res.Identity.PixelMatches, "only the first replay, which had nothing to leak from, matches")
			}
		})
	}
}

func TestReadBatchReportRefusesMalformedReports(t *testing.T) {
	sum := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	line := func(id string) string {
		return fmt.Sprintf(`{"id":%q,"output":"/o/%s.png","output_sha256":%q,"task_ms":2}`, id, id, sum)
	}
	for name, tc := range map[string]struct{ body, msg string }{
		"no load line":    {line("a") + "\n", `want {"load_ms": ...}`},
		"short sha256":    {`{"load_ms":1}` + "\n" + `{"id":"a","output":"/o","output_sha256":"ab","task_ms":1}` + "\n", "line 2"},
		"a replay twice":  {`{"load_ms":1}` + "\n" + line("a") + "\n" + line("a") + "\n", "replay a twice"},
		"not JSON":        {`{"load_ms":1}` + "\nnope\n", "line 2"},
		"good (two ids)":  {`{"load_ms":3.5}` + "\n" + line("a") + "\n" + line("b") + "\n", ""},
		"good (no lines)": {`{"load_ms":0}` + "\n", ""},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "native-batch.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
			head, lines, err := readBatchReport(path)
			if tc.msg != "" {
				require.ErrorContains(t, err, tc.msg)
				return
			}
			require.NoError(t, err)
			assert.GreaterOrEqual(t, head.LoadMs, 0.0)
			for id, l := range lines {
				assert.Equal(t, "/o/"+id+".png", l.Output)
			}
		})
	}
}

// fakeGPUs is the fake NVML reading: two H200s.
const fakeGPUs = `{"nvml_version": "13.580", "driver_version": "580", "cuda_driver_version": 13000, "count": 2, "devices": [
 {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-fake-0", "memory_total_bytes": 150754820096, "memory_free_bytes": 150109880320, "compute_capability": "9.0", "pci_bus_id": "00000000:00:06.0"},
 {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-fake-1", "memory_total_bytes": 150754820096, "memory_free_bytes": 150109880320, "compute_capability": "9.0", "pci_bus_id": "00000000:00:07.0"}]}
`

// A row on two GPUs whose family has no batch mode replays in parallel, one process per
// GPU at a time, each process on one GPU, both GPUs used.
func TestIdentityParallelOnTheRowsGPUs(t *testing.T) {
	p := newPipeline(t, false)
	reader := filepath.Join(t.TempDir(), "gpuread")
	require.NoError(t, os.WriteFile(reader, []byte("#!/bin/sh\nQUALKIT_FAKE=gpuread exec "+os.Args[0]+"\n"), 0o755))
	p.cfg.GPURead = reader
	c := p.row("two-gpus", "")
	c.Needs.GPU.Count = 2
	s := p.start(t)
	res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err, "%+v", res.Stages)
	require.NotNil(t, res.Identity)
	assert.Equal(t, schema.NativeParallel, res.Identity.Mode)
	assert.Equal(t, res.Identity.Total, res.Identity.PixelMatches)
	logs, err := filepath.Glob(filepath.Join(s.Evidence.Dir, "two-gpus", "identity", "*-native.log"))
	require.NoError(t, err)
	require.Len(t, logs, 4)
	used := map[string]int{}
	for _, l := range logs {
		var line struct {
			GPUs string `json:"gpus"`
		}
		b, err := os.ReadFile(l)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(bytes.TrimSpace(b), &line), "%s", b)
		used[line.GPUs]++
	}
	assert.Equal(t, 4, used["GPU-fake-0"]+used["GPU-fake-1"], "every replay on exactly one GPU: %v", used)
	assert.Positive(t, used["GPU-fake-0"])
	assert.Positive(t, used["GPU-fake-1"])
	assert.Equal(t, 4, res.TimeBudget.NativeLoads)
}

// The whole overlapped order on the fake family: AIPerf starts with the server and waits
// for the model, the batch preloads; the serial order starts neither early. Both qualify
// with the same pixels.
func TestPipelineOrders(t *testing.T) {
	p := newPipeline(t, false)
	s := p.start(t)
	c := p.row("early", "")
	c.Adapter, c.Needs.ResidentBytes = FakeEarly{FakeBatch{Mode: "ok", Preload: true}}, 1<<20
	res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err)
	tb := res.TimeBudget
	assert.Equal(t, schema.OrderOverlapped, tb.Order)
	require.NotNil(t, tb.Overlap)
	assert.True(t, tb.Overlap.AIPerfEarly, tb.Overlap.AIPerfWhy)
	assert.True(t, tb.Overlap.NativePreload, tb.Overlap.NativeWhy)
	assert.Positive(t, tb.Overlap.AIPerfAheadS)

	p.cfg.Serial = true
	s = p.start(t)
	c.Name = "serial"
	serial, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err)
	assert.Equal(t, schema.OrderSerial, serial.TimeBudget.Order)
	assert.Nil(t, serial.TimeBudget.Overlap)
	assert.Equal(t, serial.TimeBudget.ModelWorkS, serial.TimeBudget.CriticalPathS)
	for i, q := range serial.Identity.Requests {
		assert.Equal(t, res.Identity.Requests[i].Prompt, q.Prompt)
		assert.Equal(t, res.Identity.Requests[i].HTTPSHA256, q.HTTPSHA256)
	}
}

// The overlapped order's preload: the batch starts with the serve stage, waits for its
// items until identity, and gives the same pixels; its wait is no load. A row that fails
// before identity stops the waiting batch at once (it would wait minutes for its items).
func TestIdentityPreloadedBatch(t *testing.T) {
	p := newPipeline(t, false)
	c := p.row("preload", "")
	c.Adapter, c.Needs.ResidentBytes = FakeBatch{Mode: "ok", Preload: true}, 1<<20
	s := p.start(t)
	res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err)
	assert.Equal(t, schema.StatusQualified, res.Status, res.Reason)
	assert.Equal(t, schema.NativeBatch, res.Identity.Mode)
	assert.Equal(t, 4, res.Identity.PixelMatches)
	tb := res.TimeBudget
	require.NotNil(t, tb.Overlap)
	assert.True(t, tb.Overlap.NativePreload, tb.Overlap.NativeWhy)
	assert.False(t, tb.Overlap.AIPerfEarly, "the fake family does not state that its models list waits for the load")
	assert.Positive(t, tb.Overlap.NativeAheadS)
	assert.Less(t, tb.Model.NativeLoadS, tb.Overlap.NativeAheadS, "the batch's wait for its items is no load")
	assert.InDelta(t, schema.CriticalPath(tb.Model, true, tb.Overlap.ServerEarly), tb.CriticalPathS, 0.002)

	c = p.row("preload-fails", faultConstant)
	c.Adapter, c.Needs.ResidentBytes = FakeBatch{FakeFamily: FakeFamily{Fault: faultConstant}, Mode: "ok", Preload: true}, 1<<20
	start := time.Now()
	res, err = s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.Error(t, err)
	assert.Less(t, time.Since(start), time.Minute, "the failed row waited for its preloaded batch")
	st, _ := res.Stage(schema.StageQuality)
	assert.Equal(t, schema.Fail, st.Status)
	require.NotNil(t, res.TimeBudget.Overlap)
	assert.True(t, res.TimeBudget.Overlap.NativePreload)
}
