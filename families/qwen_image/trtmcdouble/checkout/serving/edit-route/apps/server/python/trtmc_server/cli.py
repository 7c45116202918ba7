# qualkit contract double: stands for trtmc_server/cli.py (the control plane's command line, @ a9ed5f69); qualkit's binary plays it.
