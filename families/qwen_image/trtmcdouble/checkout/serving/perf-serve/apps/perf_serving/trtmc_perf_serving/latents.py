# qualkit contract double: stands for trtmc_perf_serving/latents.py (latent replay); qualkit's binary plays it.
