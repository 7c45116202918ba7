// Command trtmcdouble is qualkit's contract double of TensorRT-Model-Connect: one static
// binary that plays cmake, python3/python, trtmc, trtmc-server and
// trtmc_benchmark_worker, chosen by the name it runs under (see package trtmcdouble).
package main

import (
	"os"

	"qualkit/families/qwen_image/trtmcdouble"
)

func main() {
	os.Exit(trtmcdouble.Main(os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}
