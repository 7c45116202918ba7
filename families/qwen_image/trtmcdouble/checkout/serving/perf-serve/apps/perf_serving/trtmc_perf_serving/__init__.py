"""qualkit contract double: stands for TRTMC's trtmc_perf_serving package (apps/perf_serving
@ 3878755c), not its code. Without TRTMC's own sources beside the clone
(TRTMC_PERF_SERVE=...), `python3 -m trtmc_perf_serving serve ...` is played by qualkit's
binary, its Go imitation of perf-serve (families/qwen_image/trtmcdouble/perfserve.go), which a
conformance test holds to TRTMC's real server where both can run."""
