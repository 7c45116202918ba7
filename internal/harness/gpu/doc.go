// Package gpu owns GPU discovery for the harness: it reads the host's NVIDIA
// GPUs through NVML into a Reading (kept as evidence), chooses the GPUs a
// row needs (Select) and describes them as the fields of a Docker device
// request (DeviceRequest).
//
// It must not know about Docker, containers or checkpoints: callers map
// DeviceRequestFields onto the Docker API type, and turn a row into Needs.
package gpu
