#!/usr/bin/env bash
# Installs the Debian packages Saltus builds and tests with. Idempotent: packages already present
# are skipped, so `make demo` / `make test` stay fast on a prepared machine. `--fuzz` adds the
# compiler `make fuzz` and `make test-sanitize` need.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  ccache                 # compiler cache: `make pip-check` reuses the objects of `make build`
  libeigen3-dev          # linear algebra
  libsundials-dev        # CVODES and IDAS (integration, root finding, forward sensitivities)
  libsuitesparse-dev     # KLU: sparse LU of large multibody matrices
  libceres-dev           # ceres::Jet, the forward-mode dual number the model templates run with
  libgtest-dev           # tests
  libbenchmark-dev       # bench/
  libcli11-dev           # command-line parsing
  nlohmann-json3-dev     # JSON output
  libfmt-dev             # report formatting
  libyaml-cpp-dev        # planar model files (YAML)
  liburdfdom-dev         # URDF robots (urdf: in model files, saltus run robot.urdf)
  libtinyxml-dev         # where a URDF's links and joints are, for error messages (urdfdom's parser)
  libnlopt-dev           # saltus optimize: bounded L-BFGS and CCSAQ
  libplplot-dev          # saltus optimize --out: the convergence plot
  plplot-driver-cairo    # PLplot's PNG driver (pngcairo)
  python3-matplotlib     # the plots and animations of --out (scripts/saltus-plot), the Python example's plot
  pybind11-dev           # the Python module
  python3-dev            # its headers
  python3-numpy          # its arrays
  python3-pytest         # its tests
  python3-venv python3-pip python3-setuptools python3-wheel   # `pip install .` (make pip-check)
)

# `make fuzz` (docs/fuzzing.md) and `make test-sanitize` pass --fuzz: clang with libFuzzer and the sanitizer runtimes
# (bookworm's clang is 14; libFuzzer is in libclang-rt-14-dev), llvm for llvm-symbolizer.
for arg in "$@"; do
  case "$arg" in
    --fuzz) packages+=(clang libclang-rt-14-dev llvm) ;;
    *) echo "install-deps: unknown option '$arg' (--fuzz)" >&2; exit 2 ;;
  esac
done

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
