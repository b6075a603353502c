#!/usr/bin/env bash
# Installs the Debian packages Saltus builds and tests with. Idempotent: packages already present
# are skipped, so `make demo` / `make test` stay fast on a prepared machine.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libeigen3-dev          # linear algebra
  libsundials-dev        # CVODES (integration, root finding, forward sensitivities)
  libceres-dev           # ceres::Jet, the forward-mode dual number the model templates run with
  libgtest-dev           # tests
  libbenchmark-dev       # bench/
  libcli11-dev           # command-line parsing
  nlohmann-json3-dev     # JSON output
  libfmt-dev             # report formatting
  libyaml-cpp-dev        # planar model files (YAML)
  python3-matplotlib     # `make demo` plots (scripts/plot_demo.py)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
