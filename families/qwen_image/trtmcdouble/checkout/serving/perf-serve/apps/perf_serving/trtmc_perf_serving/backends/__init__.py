# qualkit contract double: stands for trtmc_perf_serving/backends/__init__.py; qualkit's binary plays it.
