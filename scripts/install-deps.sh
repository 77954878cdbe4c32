#!/usr/bin/env bash
# Installs exactly the Debian packages shakedown needs to build, test and demo.
# Idempotent: when everything is present it does nothing (no apt-get update) and returns at once.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  openmpi-bin libopenmpi-dev
  libhdf5-dev hdf5-tools
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libhwloc-dev hwloc
  libopenblas-dev libxxhash-dev libdeflate-dev
  libucx-dev ucx-utils
  libgtest-dev googletest
  python3 python3-h5py python3-pandas python3-jsonschema python3-prometheus-client
  slurmctld slurmd slurm-client munge
  clang libclang-rt-14-dev llvm
  fio mbw
  libjs-chart.js chromium python3-pil
)
# clang + libclang-rt-14-dev: the ASan/UBSan build and the libFuzzer targets of scripts/test.sh;
# llvm: llvm-symbolizer, so sanitizer reports name functions and lines.
# libdeflate-dev: the recorder compresses its largest rows itself (faster than zlib, same format).
# python3-jsonschema, python3-prometheus-client: the e2e tests validate the JSON report against
# docs/report-schema.json and parse the Prometheus textfile with the client's own parser.
# libjs-chart.js: Chart.js, which the HTML report inlines (built into the binary);
# chromium, python3-pil: the e2e test renders the report headless and checks the picture.
# fio: the baseline bench/bench_checkpoint.sh measures the checkpoint phase against; mbw: the
# memcpy baseline of bench/bench_devices.sh.

missing=()
for p in "${packages[@]}"; do
  # dpkg-query is fast and works offline; "install ok installed" is the only state that counts.
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2; exit 2; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
