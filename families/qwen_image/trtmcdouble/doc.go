// Package trtmcdouble is a contract double of NVIDIA TensorRT-Model-Connect (TRTMC) for
// the calls qualkit's qwen_image adapter makes. Only what cannot run here is imitated:
// python3, pytest (8.4.2, TRTMC's pin), CMake and Ninja are real, in the double's Python
// image (scripts/double-image.sh); with TRTMC_PERF_SERVE TRTMC's own perf-serve serves its
// row (behind the recorder, record.go), without it a replay of what it answered
// (replay.go, testdata/perfserve).
//
// One static Go binary (cmd/trtmcdouble) plays the rest, chosen by argv[0]: the native
// programs the stand-in CMakeLists copies it to, and, as `trtmcdouble ROLE`, what the
// checkouts' stand-in Python files hand to it (programs in main.go). Each accepts the
// command lines and writes the formats of TRTMC's real program, rejecting anything else
// with a message naming what it did not understand.
//
// The double never pretends to be real: no model, no GPU; every artifact it writes carries
// a marker ("qualkit_contract_double": true), and its image is a deterministic colour
// transform of the reference (Edit), not a diffusion result.
//
// The package also holds the host-side setup for qualkit's tests (Build, Checkout,
// HFCache) and the recording's format (Recording, RequestDigest).
package trtmcdouble
