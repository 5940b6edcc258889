# Linux aarch64 (Raspberry Pi 5 and similar) with Debian's g++-aarch64-linux-gnu.
# orchestrator/build.py passes the resolved compiler as CMAKE_CXX_COMPILER so
# the cache key and the build use the same one; this is the fallback.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
if(NOT CMAKE_CXX_COMPILER)
  set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
endif()
