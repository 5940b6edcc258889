#!/usr/bin/env bash
# Install the Debian packages the tests need (the runner's build tools and the
# integration testbed's peers, headless Chromium for the HTML report), only when missing.
# The emulated Android phone (tests/integration/testbed/android*.py) needs mksh (its sh), toybox
# (its commands) with busybox-static for the few toybox lacks, patchelf, and qemu-user-static
# (qemu for a root without glibc); util-linux's unshare and coreutils' chroot are always there.
set -euo pipefail
need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in cmake g++ openssh-server openssh-client adb qemu-user g++-aarch64-linux-gnu iproute2 chromium \
           mksh toybox busybox-static patchelf qemu-user-static; do
  have "$pkg" || need+=("$pkg")
done
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "testbed: installing ${need[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
