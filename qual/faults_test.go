package qual

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/families/refedit"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// negativeControl is one fault injected into the reference row, and the stage that
// must catch it first with a message containing symptom. docs/operations.md's "Negative
// controls" table is this table (TestNegativeControlsTableMatchesREADME).
type negativeControl struct {
	fault   string // docs/operations.md's fault column
	row     func(c *harness.Checkpoint, f *refedit.Faulty)
	stage   string
	symptom string
}

// noPair runs a fault without the quality pair's reference criteria, so that the influence
// gate, which follows, is the one to see it (as for a family that names no pair).
func noPair(change func(*harness.Checkpoint, *refedit.Faulty)) func(*harness.Checkpoint, *refedit.Faulty) {
	return func(c *harness.Checkpoint, f *refedit.Faulty) {
		change(c, f)
		f.NoPair = true
	}
}

func serveFault(spec string) func(*harness.Checkpoint, *refedit.Faulty) {
	return func(_ *harness.Checkpoint, f *refedit.Faulty) { f.Fault = spec }
}

var negativeControls = []negativeControl{
	{"fixtures manifest missing", func(c *harness.Checkpoint, _ *refedit.Faulty) {
		c.Fixtures = "fixtures/image_edit/negative-control-no-such-manifest.json"
	}, "preflight", "1 requirement(s) not met"},
	{"bundle build fails (num_inference_steps 0)", func(_ *harness.Checkpoint, f *refedit.Faulty) { f.NumInferenceSteps = 0 },
		"build", "num-inference-steps"},
	{"correctness case skips", func(_ *harness.Checkpoint, f *refedit.Faulty) { f.CaseFault = refedit.CaseSkips },
		"correctness", "skipped"},
	{"correctness case selects no test", func(_ *harness.Checkpoint, f *refedit.Faulty) { f.CaseFault = refedit.CaseSelectsNone },
		"correctness", "0 cases executed, expected 1"},
	{"never-ready", func(c *harness.Checkpoint, f *refedit.Faulty) {
		f.Fault, c.Deadline.Ready = "never-ready", 2*time.Second
	}, "serve", "server not ready after 2s"},
	{"a row copied under another model's name (acme/edit-v1)", func(c *harness.Checkpoint, _ *refedit.Faulty) { c.Model = "acme/edit-v1" },
		"serve", `the server serves checkpoint "qualkit/refedit-v1", the row is for "acme/edit-v1"`},
	{"wrong-size", serveFault("wrong-size"), "benchmark", "the request asked for size"},
	{"jpeg", serveFault("jpeg"), "benchmark", "not a PNG (a JPEG"},
	{"status-500:3", serveFault("status-500:3"), "benchmark", "status 500"},
	{"error-json", serveFault("error-json"), "benchmark", "carries an error and no image"},
	{"slow:3 (10 s, request deadline 3 s)", func(c *harness.Checkpoint, f *refedit.Faulty) {
		f.Fault, f.FaultDelay, c.Deadline.Request = "slow:3", 10*time.Second, 3*time.Second
	}, "benchmark", "TimeoutError"},
	{"crash:3", serveFault("crash:3"), "benchmark", "ConnectionRefusedError"},
	{"no-timing", serveFault("no-timing"), "benchmark", "Task time missing"},
	{"unchanged (the input's bytes)", serveFault("unchanged"), "benchmark", "input image unchanged"},
	{"ignore-request-id (Task time from the body)", serveFault("ignore-request-id"),
		"benchmark", "does the server honour X-Request-ID"},
	{"ignore-request-id (Task time from the records file)", func(_ *harness.Checkpoint, f *refedit.Faulty) {
		f.Fault, f.RecordsTiming = "ignore-request-id", true
	}, "benchmark", "does the server honour X-Request-ID"},
	{"constant (a flat grey image)", serveFault("constant"), "quality", "output is a constant image"},
	{"resize-only", serveFault("resize-only"), "quality", "input image unchanged or only resized"},
	{"other-instruction (a plausible edit, the wrong one)", serveFault("other-instruction"), "quality", "the pair the correctness case ran"},
	{"rotate90 (the right edit, turned)", serveFault("rotate90"), "quality", "the pair the correctness case ran"},
	{"ignore-reference (seen by the pair)", serveFault("ignore-reference"), "quality", "the pair the correctness case ran"},
	{"ignore-reference (no quality pair)", noPair(serveFault("ignore-reference")), "influence", "ignores the reference image"},
	{"weak-reference (outputs one pixel apart, no quality pair)", noPair(serveFault("weak-reference")), "influence", "all but ignores the reference image"},
	{"nondeterministic", serveFault("nondeterministic"), "influence", "not deterministic"},
	{"ignore-steps", serveFault("ignore-steps"), "controls", "control num_inference_steps: the time (timing.task_cpu_ms) at 100 steps is"},
	{"pin-size", serveFault("pin-size"), "controls", "control size: size=384x256 gave a 512x512 PNG"},
	{"drop-guidance", serveFault("drop-guidance"), "controls", "control guidance_scale: guidance_scale 1.0 and 2.0 gave pixel-identical outputs"},
	{"accept-unknown", serveFault("accept-unknown"), "controls", `field qualkit_unknown_control="1": answered 200`},
	{"drift in the native Task (run --fault drift)", func(_ *harness.Checkpoint, f *refedit.Faulty) { f.NativeFault = "drift" },
		"identity", "native and HTTP outputs differ"},
	{"batch native Task carries state between replays (run --batch --leak-state)", func(_ *harness.Checkpoint, f *refedit.Faulty) { f.LeakState = true },
		"identity", "native and HTTP outputs differ"},
}

// positiveControls are the unfaulted rows the faults are copies of: each must qualify,
// so that a caught fault proves the gate and not a broken setup.
var positiveControls = []struct {
	name string
	row  func(*harness.Checkpoint, *refedit.Faulty)
}{
	{"refedit-v1", func(*harness.Checkpoint, *refedit.Faulty) {}},
	{"refedit-v1-records-timing", func(_ *harness.Checkpoint, f *refedit.Faulty) { f.RecordsTiming = true }},
}

// negativeControlMarker is set in the environment of every process these tests start
// (AIPerf's worker processes included, whose argv names nothing of ours), so that the
// leftover check finds them all.
const negativeControlMarker = "QUALKIT_NEGATIVE_CONTROL"

// TestNegativeControls proves that every gate can fail: each row is the reference row
// with one fault, run through every stage without subtests; the first failed stage must
// be the one named in the table, with the symptom in its error, every later stage
// "not-run", and the row's evidence kept. The unfaulted rows must qualify first.
func TestNegativeControls(t *testing.T) {
	start := time.Now()
	marker := fmt.Sprintf("%d-%d", os.Getpid(), start.UnixNano())
	t.Setenv(negativeControlMarker, marker)
	var (
		mu       sync.Mutex
		ports    []int
		runs     []string
		injected int
		caught   int
		results  = map[string]string{}
		notRun   string // why the positive controls could not run, in a non-qualification run
	)
	addPort := func(p int) { mu.Lock(); ports = append(ports, p); mu.Unlock() }
	addRun := func(id string) { mu.Lock(); runs = append(runs, id); mu.Unlock() }

	t.Run("positive", func(t *testing.T) {
		for _, pc := range positiveControls {
			t.Run(pc.name, func(t *testing.T) {
				row := controlRow(pc.name, "positive control: the unfaulted reference row", pc.row)
				s := isolatedSuite(t, pc.name, baseConfig.Rebuild)
				addRun(s.Evidence.RunID)
				res, err := s.Run(t.Context(), row, t.TempDir(), harness.Reproduce(t.Name()))
				if p, ok := serverPort(s, row.Name); ok {
					addPort(p)
				}
				require.NotNil(t, res, "%v", err)
				t.Logf("%s (%s): %s", res.Status, res.Runtime, stageTimes(res))
				if res.Status == schema.StatusNotRun {
					notRun = res.Reason
					t.Skipf("not a qualification run and the host lacks a requirement: %s", res.Reason)
				}
				require.NoError(t, err)
				// A tree with uncommitted changes passes every stage but never qualifies.
				want := schema.StatusQualified
				if s.Provenance().Dirty {
					want = schema.StatusDirty
				}
				assert.Equal(t, want, res.Status, "%s", res.Reason)
			})
		}
	})
	switch {
	case t.Failed():
		t.Fatal("the unfaulted rows do not qualify, so the negative controls would prove nothing")
	case notRun != "":
		t.Skipf("not a qualification run: the unfaulted row could not run (%s)", notRun)
	}

	t.Run("faults", func(t *testing.T) {
		for _, nc := range negativeControls {
			t.Run(slug(nc.fault), func(t *testing.T) {
				t.Parallel()
				row := controlRow("refedit-v1-fault-"+slug(nc.fault), "negative control: "+nc.fault, nc.row)
				// The positive controls built the bundle; the rows share its cache entry.
				s := isolatedSuite(t, slug(nc.fault), false)
				addRun(s.Evidence.RunID)
				res, runErr := s.Run(t.Context(), row, t.TempDir(), harness.Reproduce(t.Name()))
				if p, ok := serverPort(s, row.Name); ok {
					addPort(p)
				}
				require.NotNil(t, res, "%v", runErr)
				t.Logf("%s (%s): %s", res.Status, res.Runtime, stageTimes(res))
				if c := res.Controls; c != nil && res.Status != schema.StatusFailed {
					for _, v := range c.Controls { // what let the fault through
						t.Logf("control %s: %s, %s", v.Field, v.Verdict, v.Figure)
					}
				}
				stage, msg := firstFailed(res)
				mu.Lock()
				injected++
				results[nc.fault] = stage
				if stage == nc.stage && strings.Contains(msg, nc.symptom) {
					caught++
				}
				mu.Unlock()

				assert.Equal(t, schema.StatusFailed, res.Status)
				assert.ErrorContains(t, runErr, "failed")
				if !assert.Equal(t, nc.stage, stage, "first failed stage; its error:\n%s", msg) {
					return
				}
				assert.Contains(t, msg, nc.symptom)
				after := false
				for _, st := range res.Stages {
					switch {
					case st.Name == stage:
						after = true
					case after:
						assert.Equal(t, "not-run", st.Status, "stage %s after the failed %s", st.Name, stage)
					default:
						assert.Equal(t, "pass", st.Status, "stage %s before the failed %s", st.Name, stage)
					}
				}
				assertEvidence(t, s, row.Name, res)
			})
		}
	})

	t.Run("no-leftovers", func(t *testing.T) {
		procs := leftoverProcesses(t, marker)
		listening := listeningPorts(t)
		var open []int
		for _, p := range ports {
			if listening[p] {
				open = append(open, p)
			}
		}
		docker := dockerLeftovers(t, runs)
		t.Logf("leftovers: %d processes, %d of %d server ports still listening, %d containers or images of %d runs",
			len(procs), len(open), len(ports), len(docker), len(runs))
		assert.Empty(t, procs, "processes these tests started are still running")
		assert.Empty(t, open, "server ports still listening")
		assert.Empty(t, docker, "containers or images of these tests' runs are still there")
	})

	t.Logf("negative controls: %d faults injected, %d caught by the intended stage with the expected message; %d positive controls; wall %s",
		injected, caught, len(positiveControls), time.Since(start).Round(time.Second))
	for _, nc := range negativeControls {
		if got, ok := results[nc.fault]; ok {
			t.Logf("  %-55s want %-11s got %s", nc.fault, nc.stage, got)
		}
	}
}

// controlRow is a copy of the reference row, its family wrapped in refedit.Faulty, with
// the fault and deadlines change sets.
func controlRow(name, reason string, change func(*harness.Checkpoint, *refedit.Faulty)) harness.Checkpoint {
	c := refeditRows[0]
	real, ok := c.Adapter.(refedit.Family)
	if !ok {
		panic(fmt.Sprintf("row %s: adapter is %T, not refedit.Family", c.Name, c.Adapter))
	}
	f := refedit.Faulty{Family: real}
	c.Name, c.Reason = name, reason
	change(&c, &f)
	c.Adapter = f
	return c
}

// isolatedSuite is the run's suite config with its own evidence folder and run id, so a
// control's row neither lands in nor collides with the run's evidence, and the container
// image built for it (removed at cleanup, as Finish would) is its own.
func isolatedSuite(t testing.TB, name string, rebuild bool, change ...func(*harness.SuiteConfig)) *harness.Suite {
	t.Helper()
	cfg := baseConfig
	cfg.EvidenceRoot, cfg.RunID, cfg.Rebuild = t.TempDir(), harness.NewRunID(time.Now())+"-nc-"+name, rebuild
	cfg.CorrectnessOnly = false
	for _, c := range change {
		c(&cfg)
	}
	s, err := harness.NewSuite(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		// Finish writes the run's reports and checks its evidence: an honest failed row
		// must pass the evidence checker too.
		if _, _, err := s.Finish(context.Background()); err != nil {
			t.Errorf("finish the control's run: %v", err)
		}
		if _, err := serving.Docker(context.Background()); err != nil {
			return // no daemon: no row ran in a container
		}
		if err := serving.RemoveRunImages(context.Background(), s.Evidence.RunID); err != nil {
			t.Errorf("remove the control's images: %v", err)
		}
	})
	return s
}

// stageTimes is "preflight 0.4s pass, build 0.6s pass, ..." for the log.
func stageTimes(res *schema.Result) string {
	parts := make([]string, len(res.Stages))
	for i, st := range res.Stages {
		parts[i] = fmt.Sprintf("%s %.1fs %s", st.Name, st.WallS, st.Status)
	}
	return strings.Join(parts, ", ")
}

func firstFailed(res *schema.Result) (stage, msg string) {
	for _, st := range res.Stages {
		if st.Status == "fail" {
			return st.Name, st.Error
		}
	}
	return "", ""
}

// assertEvidence requires the row's results.json to say what Run returned.
func assertEvidence(t *testing.T, s *harness.Suite, row string, res *schema.Result) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Evidence.Dir, row, "results.json"))
	require.NoError(t, err, "the row's evidence lost results.json")
	var got schema.Result
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, res.Status, got.Status)
	assert.Equal(t, len(res.Stages), len(got.Stages))
}

// serverPort is the port the row's server listened on, from serve/startup.json or, for
// a server that never became ready, its argv in commands.jsonl.
func serverPort(s *harness.Suite, row string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(s.Evidence.Dir, row, "commands.jsonl"))
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec schema.CommandRecord
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Stage != "serve" {
			continue
		}
		for i, a := range rec.Args {
			if a == "--port" && i+1 < len(rec.Args) {
				p, err := strconv.Atoi(rec.Args[i+1])
				return p, err == nil
			}
		}
	}
	return 0, false
}

// leftoverProcesses lists every live process whose environment carries marker.
func leftoverProcesses(t *testing.T, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	want := []byte(negativeControlMarker + "=" + marker + "\x00")
	self := os.Getpid()
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("pid %d: %s", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return out
}

// dockerLeftovers lists the containers and images labelled with one of runs. Without a
// Docker daemon no row ran in a container, and there is nothing to list.
func dockerLeftovers(t *testing.T, runs []string) []string {
	t.Helper()
	ctx := context.Background() // it also runs in cleanups, after t.Context ended
	if _, err := serving.Docker(ctx); err != nil {
		t.Logf("no Docker daemon (%v): no containers to check", err)
		return nil
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	require.NoError(t, err)
	defer cli.Close()
	var out []string
	for _, id := range runs {
		f := make(client.Filters).Add("label", serving.LabelRun+"="+id)
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		require.NoError(t, err)
		for _, c := range cs.Items {
			out = append(out, fmt.Sprintf("container %s %v (run %s)", c.ID, c.Names, id))
		}
		imgs, err := cli.ImageList(ctx, client.ImageListOptions{Filters: f})
		require.NoError(t, err)
		for _, img := range imgs.Items {
			out = append(out, fmt.Sprintf("image %s %v (run %s)", img.ID, img.RepoTags, id))
		}
	}
	return out
}

// listeningPorts reads the TCP sockets in LISTEN state from /proc/net.
func listeningPorts(t *testing.T) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 4 || fields[3] != "0A" {
				continue
			}
			_, port, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseInt(port, 16, 32); err == nil {
				out[int(p)] = true
			}
		}
	}
	return out
}

var notSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug names a subtest and a row after a fault label.
func slug(label string) string {
	return strings.Trim(notSlug.ReplaceAllString(strings.ToLower(label), "-"), "-")
}

// TestNegativeControlsTableMatchesREADME keeps docs/operations.md's "Negative controls" table
// and negativeControls the same, row for row.
func TestNegativeControlsTableMatchesREADME(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	require.NoError(t, err)
	got, err := readmeTable(string(readme), "## Negative controls")
	require.NoError(t, err)
	want := []string{"fault | stage that catches it | message"}
	for _, nc := range negativeControls {
		want = append(want, strings.Join([]string{nc.fault, nc.stage, nc.symptom}, " | "))
	}
	assert.Equal(t, want, got, "docs/operations.md \"## Negative controls\" disagrees with negativeControls in qual/faults_test.go")
}

// readmeTable returns the first Markdown table under heading, one "a | b | c" line per
// row (header first, separator dropped, cells trimmed, backticks removed).
func readmeTable(doc, heading string) ([]string, error) {
	_, section, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return nil, fmt.Errorf("no %q section", heading)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if strings.Trim(strings.Join(cells, ""), " -:") == "" {
			continue
		}
		for i, c := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "`", ""))
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("docs/operations.md %q has no table", heading)
	}
	return rows, nil
}
