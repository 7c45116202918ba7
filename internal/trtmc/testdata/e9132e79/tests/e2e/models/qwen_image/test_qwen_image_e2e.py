"""Stands for TRTMC's e2e case of the qwen_image family in qualkit's TRTMC-shaped tree
(layout of main e9132e79). It is never executed: qualkit's contract double plays pytest
for it (internal/trtmcdouble). Its path and the node id
test_qwen_image_e2e.py::test_model_e2e[qwen-image-edit-2511] are the facts the row uses.
"""
