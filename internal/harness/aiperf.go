package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// AIPerfVersion is the only AIPerf release the harness accepts.
const AIPerfVersion = "0.13.0"

// AIPerf is the benchmark client: the pinned console script and HFHome, the Hugging Face
// cache that scripts/make_tokenizer.py writes the local tokenizer into. AIPerf runs with
// HF_HOME=HFHome and HF_HUB_OFFLINE=1: it finds the tokenizer cached, skips its tokenizer
// prefetch and never touches the network.
type AIPerf struct {
	Bin    string
	HFHome string
}

// Tokenizer is the local tokenizer's repo id in AIPerf.HFHome.
const Tokenizer = "qualkit/offline-word-tokenizer"

var versionWait = 10 * time.Minute

// CheckVersion runs `aiperf --version` and requires the pin (preflight refuses an
// inherited AIPERF_ setting: steeringEnv).
func (a AIPerf) CheckVersion(ctx context.Context) (string, error) {
	st, err := os.Stat(a.Bin)
	if err != nil {
		return "", fmt.Errorf("aiperf not found at %s: run `make setup` (installs aiperf==%s into .venv)", a.Bin, AIPerfVersion)
	}
	// `aiperf --version` starts AIPerf's interpreter (1.6 s of CPU): once per program file
	// per process; a reinstall rewrites the file (size and time in the key). versionWait
	// guards against a hung one, no speed expectation: 2 minutes was too few at load 44.
	key := fmt.Sprintf("%s\x00%d\x00%d", a.Bin, st.Size(), st.ModTime().UnixNano())
	if _, known := checkedVersions.Load(key); !known {
		vctx, cancel := context.WithTimeout(ctx, versionWait)
		defer cancel()
		cmd := exec.CommandContext(vctx, a.Bin, "--version")
		cmd.Env = append(os.Environ(), serving.NoBytecodeEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil && ctx.Err() == nil && vctx.Err() != nil {
			err = fmt.Errorf("did not exit in %v (hung, or a host too loaded to start Python), stopped", versionWait)
		}
		if err != nil {
			return "", fmt.Errorf("aiperf --version: %v: %s", err, bytes.TrimSpace(out))
		}
		v := strings.TrimSpace(string(out))
		if fields := strings.Fields(v); len(fields) > 0 {
			v = fields[len(fields)-1]
		}
		if v != AIPerfVersion {
			return v, fmt.Errorf("aiperf at %s is version %q, the pin is %s: run `make setup` to reinstall it", a.Bin, v, AIPerfVersion)
		}
		checkedVersions.Store(key, true)
	}
	ref := filepath.Join(a.HFHome, "hub", "models--"+strings.ReplaceAll(Tokenizer, "/", "--"), "refs", "main")
	if _, err := os.Stat(ref); err != nil {
		return AIPerfVersion, fmt.Errorf("local tokenizer %s missing from %s (AIPerf would try the network): run `make setup`", Tokenizer, a.HFHome)
	}
	return AIPerfVersion, nil
}

// aiperfTempBase is where AIPerf's temp folder (AIPerfRun.TempDir) is made: the temp
// folder, unless its path is too long. AIPerf 0.13.0 binds its IPC sockets at
// <TMPDIR>/tmpXXXXXXXX/aiperf/<name>.ipc, names up to 34 bytes
// (dataset_manager_proxy_frontend.ipc), and a Unix socket's path holds at most 107
// bytes: with the folder's own 18 (aiperf-<digits>/), a base longer than 32 bytes makes
// AIPerf fail to start. /tmp is used then.
func aiperfTempBase() string {
	if d := os.TempDir(); len(d) <= 32 {
		return d
	}
	return "/tmp"
}

// aiperfStartBound is how long AIPerf 0.13.0's own services may take to start or stay
// silent before AIPerf gives up on them (aiperf/common/environment.py: _ServiceSettings,
// _ServiceCommunicationFields). Each service is a Python process of its own; on a 2-core
// host at load 30-40 they took longer than the defaults: "Some services failed to
// register within timeout" (30 s), and "Required service 'worker_manager' died (missed
// heartbeats on 2 consecutive ticks)" once the run was done (docs/ci.md). The command's
// own limit, which covers this bound, stays the guard against a hang.
const aiperfStartBound = 5 * time.Minute

// aiperfBounds is AIPerf's environment for aiperfStartBound (300 s; default in brackets).
var aiperfBounds = []string{
	"AIPERF_SERVICE_REGISTRATION_TIMEOUT=300",      // every service registers (30 s)
	"AIPERF_SERVICE_START_TIMEOUT=300",             // a phase waits for its workers (30 s)
	"AIPERF_SERVICE_PROFILE_START_TIMEOUT=300",     // the controller starts the profile (60 s)
	"AIPERF_SERVICE_COMMAND_RESPONSE_TIMEOUT=300",  // a command to the controller (30 s)
	"AIPERF_SERVICE_CONNECTION_PROBE_TIMEOUT=300",  // a service probes the message bus (90 s)
	"AIPERF_SERVICE_HEARTBEAT_MISSED_THRESHOLD=60", // heartbeats every 5 s: silent 300 s (15 s)
}

// checkedVersions are the AIPerf program files found at the pinned version.
var checkedVersions sync.Map

type AIPerfRun struct {
	// WaitForModel, when positive, starts AIPerf before the server is ready: it waits
	// up to this long for GET /v1/models to list the model (the overlapped order).
	WaitForModel   time.Duration
	URL            string
	Model          string
	Input          string   // JSONL file
	Endpoint       []string // the endpoint, dataset type and extra inputs (wire.Protocol.AIPerfEndpoint)
	Measured       int
	Warmup         int
	Seed           int
	ArtifactDir    string
	RequestTimeout time.Duration
	// TempDir is AIPerf's TMPDIR, one of its own removed after the run: AIPerf 0.13.0
	// leaves its IPC sockets' mkdtemp folder and aiperf_mmap_<benchmark id> there.
	TempDir string
}

// Command is the exact argv: concurrency 1, sequential sampling, raw export, no UI, no
// telemetry, and the local tokenizer.
func (a AIPerf) Command(r AIPerfRun) family.Command {
	args := append([]string{a.Bin, "profile"}, r.Endpoint...)
	args = append(args,
		"--url", r.URL,
		"--model", r.Model,
		"--tokenizer", Tokenizer,
		"--input-file", r.Input,
		"--dataset-sampling-strategy", "sequential",
		"--request-count", strconv.Itoa(r.Measured),
		"--warmup-request-count", strconv.Itoa(r.Warmup),
		"--concurrency", "1",
		"--random-seed", strconv.Itoa(r.Seed),
		"--request-timeout-seconds", strconv.Itoa(int(r.RequestTimeout.Seconds())),
		"--artifact-dir", r.ArtifactDir,
		"--export-level", "raw",
		"--ui", "none",
		"--no-server-metrics",
		"--no-gpu-telemetry",
	)
	if r.WaitForModel > 0 {
		// Started while the server loads: probe GET /v1/models, never an inference request
		// (one request more in the server's records than in the export).
		args = append(args, "--wait-for-model-timeout", strconv.Itoa(int(r.WaitForModel.Seconds())),
			"--wait-for-model-mode", "models", "--wait-for-model-interval", "0.5")
	}
	env := []string{"HF_HOME=" + a.HFHome, "HF_HUB_OFFLINE=1", "HF_HUB_DISABLE_TELEMETRY=1", "DO_NOT_TRACK=1", "PYTHONUNBUFFERED=1"}
	env = append(env, aiperfBounds...)
	if r.TempDir != "" {
		env = append(env, "TMPDIR="+r.TempDir)
	}
	return family.Command{Args: args, Env: env}
}

type Export struct {
	Raw     []schema.RawRecord
	Profile []schema.ProfileRecord
}

// ReadExport parses an AIPerf artifact directory's raw and profile exports. The summary
// is optional (AIPerf writes none when every request failed), but a torn one is an error
// returned with the records.
func ReadExport(dir string) (*Export, error) {
	var ex Export
	var err error
	if ex.Raw, err = schema.ReadRaw(filepath.Join(dir, schema.ExportRaw)); err != nil {
		return nil, fmt.Errorf("aiperf export %s: %w", schema.ExportRaw, err)
	}
	if ex.Profile, err = schema.ReadProfile(filepath.Join(dir, schema.ExportProfile)); err != nil {
		return nil, fmt.Errorf("aiperf export %s: %w", schema.ExportProfile, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, schema.ExportSummary)); err == nil {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			// The records stand: what they say is still counted.
			return &ex, fmt.Errorf("aiperf summary: %w", err)
		}
	}
	return &ex, nil
}

// Phase returns one phase's raw records, in file order.
func (ex *Export) Phase(phase string) []schema.RawRecord {
	var out []schema.RawRecord
	for _, r := range ex.Raw {
		if r.Metadata.BenchmarkPhase == phase {
			out = append(out, r)
		}
	}
	return out
}
