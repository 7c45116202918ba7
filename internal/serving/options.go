package serving

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
)

// Option configures a Run or a Start. The runtime is a process unless InContainer says
// otherwise: that option is the one place where the runtime is chosen.
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

// Container is where a command runs when it runs in a container.
type Container struct {
	Image      Image
	RunID, Row string  // labels of what is created, for the sweep of leftovers
	Mounts     []Mount // bind mounts; commands' host paths under them are mapped into the container
	// IPCHost shares the host's IPC namespace (TRTMC's docs run its image with --ipc=host:
	// PyTorch and NCCL need more shared memory than a container's default 64 MiB).
	IPCHost bool
	// MemoryBytes caps the container's memory, swap included (docker run --memory and
	// --memory-swap); 0: no cap. Past it the kernel OOM-kills the container.
	MemoryBytes int64
	// UnderEntrypoint runs each command as the image's CMD, under the image's own
	// ENTRYPOINT, which must end by running its arguments (NVIDIA's images:
	// /opt/nvidia/nvidia_entrypoint.sh sets up CUDA forward compatibility, then `exec
	// "$@"`); an image without one runs the command itself. Otherwise the command's
	// program replaces the ENTRYPOINT (docker run --entrypoint).
	UnderEntrypoint bool
}

// Mount is a bind mount of a host path into the container.
type Mount struct {
	Host, Container string
	ReadOnly        bool
}

// InContainer runs the command in a container of c.Image.
func InContainer(c Container) Option { return func(o *options) { o.container = &c } }

// WithGPUs gives the command exactly these GPUs, by UUID: a device request for a
// container (the daemon must have the nvidia runtime), CUDA_VISIBLE_DEVICES for a process.
func WithGPUs(devs []gpu.Device) Option { return func(o *options) { o.gpus = devs } }

// WithTempDir gives a process its own temp folder, dir (made if missing), as TMPDIR and
// GOTMPDIR, unless the command sets them: what a killed process leaves there (a go
// build's work folder) goes with dir. A container's temp folder goes with the container.
func WithTempDir(dir string) Option { return func(o *options) { o.tempDir = dir } }

// WithGroupTracker tells g of the process group of every process started (none for a
// container: its processes go with it).
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

// processTempEnv is a process's TMPDIR and GOTMPDIR (WithTempDir), made if missing, and
// where its Python keeps bytecode: a folder of the temp folder, which is the run's own, or,
// with none, nowhere (NoBytecodeEnv). The command's own Env comes after it and wins.
func (o options) processTempEnv() []string {
	if o.tempDir == "" || os.MkdirAll(o.tempDir, 0o755) != nil {
		return NoBytecodeEnv
	}
	return []string{"TMPDIR=" + o.tempDir, "GOTMPDIR=" + o.tempDir, "PYTHONPYCACHEPREFIX=" + filepath.Join(o.tempDir, "pycache")}
}

// Every Python the harness starts reads only bytecode it wrote in this run: with
// PYTHONPYCACHEPREFIX set, Python reads and writes a module's bytecode under that folder
// alone, never in a __pycache__ beside the source, where a forger's .pyc (git ignores
// them) would run in its place; pytest keeps its rewritten tests there too.
// NoBytecodeEnv points it where no folder can be made (under a device file) and has it
// write none: it compiles every module from its source. containerPycache is the
// container's own folder, fresh with each container.
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
