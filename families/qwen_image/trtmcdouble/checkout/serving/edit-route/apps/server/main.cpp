// qualkit contract double: stands for the native trtmc-server (main.cpp @ 0f958bfb); qualkit's binary plays it.
