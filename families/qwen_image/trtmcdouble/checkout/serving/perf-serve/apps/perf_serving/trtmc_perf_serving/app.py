# qualkit contract double: stands for trtmc_perf_serving/app.py; the route it declares, as TRTMC's does:
# @app.post("/v1/tasks/{name}"); qualkit's binary plays it.
