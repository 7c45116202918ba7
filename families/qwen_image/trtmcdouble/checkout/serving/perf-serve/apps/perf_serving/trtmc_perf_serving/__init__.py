"""qualkit contract double: stands for TRTMC's trtmc_perf_serving package (apps/perf_serving
@ 3878755c), not its code. Without TRTMC's own sources beside the clone
(TRTMC_PERF_SERVE=...), `python3 -m trtmc_perf_serving serve ...` is a replay of what TRTMC's
own server answered the same requests (families/qwen_image/trtmcdouble/replay.go and
testdata/perfserve), which TestPerfServeConformance re-records where TRTMC's server can run."""
