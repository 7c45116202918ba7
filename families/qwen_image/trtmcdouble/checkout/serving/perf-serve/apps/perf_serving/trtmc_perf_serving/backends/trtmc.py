# qualkit contract double: stands for trtmc_perf_serving/backends/trtmc.py (the persistent worker backend); qualkit's binary plays it.
