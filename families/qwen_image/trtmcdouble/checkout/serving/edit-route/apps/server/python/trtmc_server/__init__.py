"""qualkit contract double: stands for TRTMC's trtmc_server package (apps/server/python @
a9ed5f69), not its code. The native trtmc-server the double's CMake build makes execs
`python3 -P -m trtmc_server ARGS --worker-binary <itself>` (main.cpp @ 0f958bfb), as the
real one does; this package then runs qualkit's Go control plane with the same
arguments."""
