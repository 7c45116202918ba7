# qualkit contract double: stands for trtmc_perf_serving/profiles.py (the catalog profile); qualkit's binary plays it.
