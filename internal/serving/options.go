package serving

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
)

// Option configures a Run or a Start; the runtime is a process unless InContainer.
type Option func(*options)

type options struct {
	container *Container
	gpus      []gpu.Device
	recorder  Recorder
	stage     string
	tempDir   string
	groups    GroupTracker
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

type Container struct {
	Image      Image
	RunID, Row string  // labels of what is created, for the sweep of leftovers
	Mounts     []Mount // commands' host paths under them are mapped into the container
	// IPCHost shares the host's IPC namespace: PyTorch and NCCL need more shared memory
	// than a container's default 64 MiB (TRTMC's docs run its image with --ipc=host).
	IPCHost bool
	// MemoryBytes caps memory and swap (--memory, --memory-swap); 0: no cap.
	MemoryBytes int64
	// UnderEntrypoint runs each command as the image's CMD under its ENTRYPOINT, which
	// must end by running its arguments (NVIDIA's nvidia_entrypoint.sh sets up CUDA
	// forward compatibility, then `exec "$@"`); otherwise the program is the entrypoint.
	UnderEntrypoint bool
}

type Mount struct {
	Host, Container string
	ReadOnly        bool
}

func InContainer(c Container) Option { return func(o *options) { o.container = &c } }

// WithGPUs gives the command exactly these GPUs, by UUID: a container's device request,
// a process's CUDA_VISIBLE_DEVICES.
func WithGPUs(devs []gpu.Device) Option { return func(o *options) { o.gpus = devs } }

// WithTempDir gives a process dir (made if missing) as TMPDIR and GOTMPDIR, unless the
// command sets them: what a killed process leaves there goes with dir.
func WithTempDir(dir string) Option { return func(o *options) { o.tempDir = dir } }

// WithGroupTracker tells g of every process group started (a container's go with it).
func WithGroupTracker(g GroupTracker) Option { return func(o *options) { o.groups = g } }

// WithRecorder records the command, under stage, once it ends.
func WithRecorder(r Recorder, stage string) Option {
	return func(o *options) { o.recorder, o.stage = r, stage }
}

func (o options) record(rec schema.CommandRecord, err error) error {
	if o.recorder == nil {
		return err
	}
	rec.Env = RedactEnv(rec.Env)
	if rerr := o.recorder.Record(rec); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// processTempEnv is a process's temp folder (WithTempDir) and where its Python keeps
// bytecode: under that folder, or nowhere (NoBytecodeEnv). The command's Env wins.
func (o options) processTempEnv() []string {
	if o.tempDir == "" || os.MkdirAll(o.tempDir, 0o755) != nil {
		return NoBytecodeEnv
	}
	return []string{"TMPDIR=" + o.tempDir, "GOTMPDIR=" + o.tempDir, "PYTHONPYCACHEPREFIX=" + filepath.Join(o.tempDir, "pycache")}
}

// Every Python the harness starts reads only bytecode it wrote in this run: with
// PYTHONPYCACHEPREFIX, never a __pycache__ beside the source, where a forger's .pyc (git
// ignores them) would run instead. NoBytecodeEnv points it under a device file, where no
// folder can be made, and writes none; containerPycache is fresh with each container.
var NoBytecodeEnv = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONPYCACHEPREFIX=" + os.DevNull + "/pycache"}

const containerPycache = "PYTHONPYCACHEPREFIX=/tmp/qualkit-pycache"

// processGPUEnv pins a process to the GPUs by UUID, as a container's device request does.
func (o options) processGPUEnv() []string {
	if len(o.gpus) == 0 {
		return nil
	}
	return []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(uuids(o.gpus), ",")}
}

func uuids(devs []gpu.Device) []string {
	ids := make([]string, len(devs))
	for i, d := range devs {
		ids[i] = d.UUID
	}
	return ids
}
