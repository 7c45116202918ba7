// Package trtmcdouble is a contract double of NVIDIA TensorRT-Model-Connect (TRTMC) for
// the calls qualkit's qwen_image adapter makes: small programs that accept exactly the
// command lines TRTMC's real programs accept for those calls, reject anything else with
// a message naming what they did not understand, and write TRTMC's formats (the .bundle
// container, CMakeCache.txt, JUnit XML, result.json, the serving and worker JSON).
//
// One static binary (cmd/trtmcdouble) plays every program, chosen by the base name it is
// run under (argv[0]): cmake, python3/python, trtmc, trtmc-server and
// trtmc_benchmark_worker. It runs in an image built FROM scratch, so it needs no shell
// and no libc.
//
// The double never pretends to be real: no model is loaded and no GPU is used. Every
// artifact it writes carries a marker ("qualkit_contract_double": true in JSON, in the
// bundle header, in CMakeCache.txt and JUnit properties), and the image it returns is a
// deterministic colour transform of the reference image (Edit), not a diffusion result.
//
// The package also holds the host-side setup for qualkit's tests: Build compiles the
// binary, Checkout lays out a TRTMC-shaped checkout of either layout with a Dockerfile
// that installs the double, and HFCache writes a fake Hugging Face cache.
package trtmcdouble
