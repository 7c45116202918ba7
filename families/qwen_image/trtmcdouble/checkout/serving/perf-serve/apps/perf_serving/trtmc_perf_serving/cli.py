# qualkit contract double: stands for trtmc_perf_serving/cli.py (the serve command line); qualkit's binary plays it.
