#!/usr/bin/env bash
# Installs the Debian packages ringgrad builds with. Idempotent: when everything is present
# it only checks (about a second). `setup.sh fuzz` adds clang and its libFuzzer runtime for
# scripts/fuzz.sh. The CUDA toolkit (nvcc, cuDNN, cuBLAS, NCCL) is expected
# under /usr/local/cuda; without it the build is CPU-only.
set -euo pipefail

packages=(cmake g++ make ccache libeigen3-dev libstb-dev libjpeg62-turbo-dev libpng-dev libgtest-dev libgmock-dev
          libopenmpi-dev openmpi-bin nlohmann-json3-dev libcli11-dev clang-format python3)

[[ ${1:-} == fuzz ]] && packages+=(clang libclang-rt-14-dev)
# `setup.sh two-hosts`: ip (network namespaces, veth pairs) for scripts/two_hosts.sh.
[[ ${1:-} == two-hosts ]] && packages+=(iproute2)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all packages present"
