// Package gpu owns GPU discovery for the harness: it takes the host's NVIDIA GPUs as a
// Reading (kept as evidence) from the gpuread program (cmd/gpuread, the only cgo code:
// it reads NVML through go-nvml), chooses the GPUs a row needs (Select) and describes
// them as the fields of a Docker device request (DeviceRequest).
//
// It must not know about Docker, containers or checkpoints: callers map
// DeviceRequestFields onto the Docker API type, and turn a row into Needs. It must not
// import go-nvml, so that what imports it compiles without cgo.
package gpu
