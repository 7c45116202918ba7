# qualkit contract double: stands for app.py with the stage-7 report's image edit route
# (no public TRTMC source has it): POST /v1/images/edits
