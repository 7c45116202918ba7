// Package gpu owns GPU discovery for the harness: it takes the host's NVIDIA GPUs as a
// Reading (kept as evidence) from the gpuread program (cmd/gpuread, the only cgo code:
// it reads NVML through go-nvml), chooses the GPUs a row needs (Select) and leases them
// to rows (Pool). It knows nothing of Docker, and must not import go-nvml, so that what
// imports it compiles without cgo.
package gpu
