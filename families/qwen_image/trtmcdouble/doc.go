// Package trtmcdouble is a contract double of NVIDIA TensorRT-Model-Connect (TRTMC) for
// the calls qualkit's qwen_image adapter makes. Only what cannot run here is imitated:
// python3, pytest (8.4.2, TRTMC's pin), CMake and Ninja are the real ones, in the
// double's Python image (Debian bookworm made by mmdebstrap, the pinned wheels of
// image/requirements.lock installed offline: scripts/double-image.sh, `make
// double-image`), and with TRTMC_PERF_SERVE TRTMC's own perf-serve serves its row
// (behind the recorder, record.go); without it, a replay of what TRTMC's server answered
// that row (replay.go, testdata/perfserve).
//
// One static Go binary (cmd/trtmcdouble, in the image as /usr/local/bin/trtmcdouble)
// plays the rest, chosen by the name it runs under (argv[0]): the native programs the
// stand-in CMakeLists copies it to (trtmc, trtmc-server, trtmc_benchmark_worker,
// qwen_image_e2e_harness), and, as `trtmcdouble ROLE`, what the checkouts' stand-in
// Python files hand to it (the builder tensorrt-model-connect, trtmc-server's control
// plane, the perf-serve replay trtmc-perf-serve and perf-serve-recorder,
// diffusers-reference). Each accepts
// the command lines and writes the formats of TRTMC's real program (the .bundle
// container, the worker's JSON lines, the serving JSON), rejecting anything else with a
// message naming what it did not understand.
//
// The double never pretends to be real: no model is loaded and no GPU is used. Every
// artifact it writes carries a marker ("qualkit_contract_double": true in JSON, in the
// bundle header), and the image it returns is a deterministic colour transform of the
// reference image (Edit), not a diffusion result.
//
// The package also holds the host-side setup for qualkit's tests (Build compiles the
// binary; Checkout lays out a TRTMC-shaped checkout of either layout, whose Dockerfile
// builds FROM the Python image named by PythonImage and adds the binary and the stand-in
// Python modules; HFCache writes a fake Hugging Face cache) and the recording's format
// (Recording, RequestDigest), which qual's TestPerfServeConformance makes and checks.
package trtmcdouble
