// qualkit's stand-in, NOT TensorRT-Model-Connect's source: the newer layout keeps its
// persistent worker here (TRTMC-SERVING.md section 4), and qualkit's adapter reads this
// file only to see whether the worker has the "--serve" mode. The contract double
// (families/qwen_image/trtmcdouble) plays the worker itself.
//
//   trtmc_benchmark_worker --serve SESSION.json   (JSONL on stdin/stdout)
