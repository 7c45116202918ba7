package gpu

import "errors"

// ErrNoDriver means NVML could not be loaded: the host has no NVIDIA driver
// (go-nvml dlopens libnvidia-ml.so.1, which the driver installs).
var ErrNoDriver = errors.New("libnvidia-ml.so.1 not found: no NVIDIA driver on this host; " +
	"GPU discovery needs the NVIDIA driver installed on the host " +
	"(inside a container, the NVIDIA Container Toolkit must mount libnvidia-ml.so.1)")

// ErrDriverNotLoaded means libnvidia-ml.so.1 is present but the NVIDIA
// kernel driver is not running, so NVML cannot reach any GPU.
var ErrDriverNotLoaded = errors.New("libnvidia-ml.so.1 loaded but the NVIDIA kernel driver is not running on this host; " +
	"GPU discovery needs the nvidia kernel module loaded (nvidia-smi must work)")
