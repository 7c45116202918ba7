package qual

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
	"qualkit/internal/trtmcdouble"
)

// The TRTMC contract double: small programs of qualkit's own (internal/trtmcdouble) that
// hold TRTMC's documented contracts for every command the Qwen row runs, refuse anything
// else, and write TRTMC's formats, in an image built FROM scratch. The real Qwen adapter,
// unchanged, drives it through every stage on every CI run. Its rows read
// passed-contract-double: never qualified, whatever they pass.

// doubleDir is where TestMain prepares the double's checkouts and HF cache.
func doubleDir(root string) string { return filepath.Join(root, ".cache", "trtmc-double") }

// prepareDouble writes a TRTMC-shaped checkout of each layout with the double built in,
// and the fake Hugging Face cache, under .cache/trtmc-double. Checkouts commit with fixed
// dates, so an unchanged double keeps its commit and its cached native build.
func prepareDouble(ctx context.Context, root string) error {
	dir := doubleDir(root)
	for _, layout := range []string{trtmcdouble.LayoutFamilies, trtmcdouble.LayoutLegacy} {
		co := filepath.Join(dir, layout)
		if err := os.RemoveAll(co); err != nil {
			return err
		}
		if err := trtmcdouble.Checkout(ctx, root, co, layout); err != nil {
			return err
		}
	}
	hf := filepath.Join(dir, "hf")
	if err := os.RemoveAll(hf); err != nil {
		return err
	}
	_, err := trtmcdouble.HFCache(hf)
	return err
}

// doubleRow is the Qwen row against the double in one serving shape. What differs from
// the real row: Double (the status), no GPU need and the adapter's test hooks (the SM to
// build for, a server that says it is the double). Everything else is the real row's.
func doubleRow(name, layout, response string, timing harness.TimingSource, reason string) harness.Checkpoint {
	root, _ := harness.FindRoot(".")
	c := qwenImageEditRows[0]
	c.Name, c.Double, c.Reason = name, true, reason
	c.Adapter = qwenimage.New(qwenimage.Config{
		Checkout: filepath.Join(doubleDir(root), layout), HFHome: filepath.Join(doubleDir(root), "hf"),
		Response: response, Timing: timing, AssumeSM: "90", ContractDouble: true,
	})
	c.Needs.GPU = qwenImageEditRows[0].Needs.GPU
	c.Needs.GPU.Count = 0 // the test hook: the double needs no GPU
	c.Needs.GPU.MinMemoryBytes, c.Needs.GPU.MinComputeCapability = 0, ""
	c.Deadline = harness.Deadlines{Build: 5 * time.Minute, Correctness: 5 * time.Minute, Ready: 2 * time.Minute, Request: time.Minute, Native: time.Minute}
	return c
}

// qwenDoubleRows are the shapes CI drives, on today's families/ layout: the image as
// b64_json with Task time from the body, and as a file under the scratch folder with
// Task time from the records file.
var qwenDoubleRows = harness.NewTable(
	doubleRow("qwen-double-b64-body", trtmcdouble.LayoutFamilies, qwenimage.ResponseB64JSON,
		harness.TimingSource{Body: qwenimage.DefaultTimingBody},
		"the real Qwen adapter against the TRTMC contract double (families layout): image as data[0].b64_json, Task time from trtmc_timing.model_call_ms in the body"),
	doubleRow("qwen-double-artifact-records", trtmcdouble.LayoutFamilies, qwenimage.ResponseArtifact,
		harness.TimingSource{Records: qwenimage.DefaultTimingRecords, RecordID: qwenimage.DefaultTimingRecordID},
		"the real Qwen adapter against the TRTMC contract double (families layout): image as a file:// URL under the scratch folder, Task time from the --records file joined on X-Request-ID"),
)

// TestQwenDouble drives the Qwen row through every stage against the double. `make
// qwen-double` runs it alone; `make test` runs it with everything else.
func TestQwenDouble(t *testing.T) {
	qualifyTable(t)
}

// On the e9132e79 layout the double, like TRTMC main e9132e79, has no trtmc-server: the
// row fails in preflight, in seconds, saying the checkout predates the server.
func TestQwenDoubleE9132e79PredatesTheServer(t *testing.T) {
	c := doubleRow("qwen-double-e9132e79", trtmcdouble.LayoutLegacy, qwenimage.ResponseB64JSON,
		harness.TimingSource{Body: qwenimage.DefaultTimingBody}, "the e9132e79 layout has no server")
	s := isolatedSuite(t, "e9132e79-double", false)
	start := time.Now()
	res, err := s.Run(t.Context(), c, t.TempDir())
	require.Error(t, err)
	assert.Equal(t, schema.StatusFailed, res.Status)
	st, _ := res.Stage(schema.StagePreflight)
	assert.Equal(t, schema.Fail, st.Status)
	assert.Contains(t, st.Error, "predates trtmc-server")
	assert.Less(t, time.Since(start), time.Minute, "preflight fails in the first minute")
}
