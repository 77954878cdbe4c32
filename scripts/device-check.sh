#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU (e.g. one H100 or H200). In this order (what
# the time budget leaves no room for is left out, with an N/A row saying so):
#  1. the GPU tests (tests/gpu: the NCCL backend, the pattern and FP8 kernels, the cuBLASLt GEMM
#     engine against the CPU engine, the devices phase's kernels and timings, the device-resident
#     training step against the host step);
#  2. `shakedown run` of the train phase with its step device-resident (cuBLASLt FP8 GEMMs,
#     NCCL): step time, TFLOP/s, MFU;
#  3. the devices phase on the GPU (HBM copy and triad, copy-engine and pinned host<->device
#     copies, the PCIe link under load);
#  4. the collectives (NCCL) and gemm (cuBLASLt) phases, with the telemetry sampler reading NVML;
#  5. the FP8 vs BF16 cuBLASLt benchmark (bench/bench_gemm_gpu: TFLOP/s per shape, >= 1300 FP8
#     at 8192^3 on H100 SXM/H200);
#  6. `shakedown audit` of the node (driver, CUDA, NCCL and cuBLASLt versions, MIG, GPUDirect);
#  7. a link scan of 2 virtual nodes with its messages in GPU memory where UCX can send it.
# Prints a short table and exits non-zero when anything failed, or when nvidia-smi lists a GPU
# that CUDA cannot use. Without a GPU it says so and exits 0.
#
# Usage:
#   scripts/device-check.sh            on the GPU machine
#   scripts/device-check.sh --bundle   on a build machine (no GPU needed): builds gpu_tests,
#                                      bench_gemm_gpu and shakedown with CUDA and packs them into
#                                      build-device-bundle/ (git-ignored), with the shared
#                                      libraries they load and Open MPI's runtime (its
#                                      components, PMIx, orted and mpirun, relocated on the GPU
#                                      machine with OPAL_PREFIX) and UCX's modules. A GPU machine
#                                      that has CUDA but not shakedown's Debian packages, and
#                                      cannot install them (no network), runs that bundle instead
#                                      of building: carry build-device-bundle/ there. NCCL and
#                                      cuBLASLt are not in the bundle (hundreds of MB): they are
#                                      taken from the GPU machine's CUDA toolkit or its pip
#                                      nvidia-* wheels. The bundle records a hash of the sources
#                                      it was built from; run from other sources, the check says
#                                      the bundle is stale (and fails).
# Environment:
#   SHAKEDOWN_DEVICE_BUDGET_S  total seconds for everything (default 420)
#   SHAKEDOWN_BUILD_DIR        build folder (default build-device)
#   SHAKEDOWN_DEVICE_OUT       where logs and run files go, in a new folder per run (default
#                              <build>/device-check/<date-time>); when
#                              $OUT is set (the device tool), the table and one archive of the
#                              logs and run files are copied there at the end (it takes back
#                              only a few files)
#   SHAKEDOWN_DEVICE_RUN_ARGS  extra arguments for `shakedown run` in the phases step
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
budget=${SHAKEDOWN_DEVICE_BUDGET_S:-420}
build=${SHAKEDOWN_BUILD_DIR:-build-device}
bundle="build-device-bundle"
# 15 s of the budget are kept for the table and the archive at the end.
deadline=$((SECONDS + budget - 15))
jobs=$(nproc 2>/dev/null || echo 4)

results=()  # "name|result|detail"
failed=0
out=""     # where the logs go, once there is a GPU
run_env=() # what runs the bundle's programs (env with its library paths), empty when built here

say() { echo "device-check: $*"; }
print_table() {
  ((${#results[@]})) || return 0
  echo
  printf '%-72s %-8s %s\n' "test" "result" "detail"
  printf '%-72s %-8s %s\n' "----" "------" "------"
  local row name status detail
  for row in "${results[@]}"; do
    IFS='|' read -r name status detail <<<"$row"
    printf '%-72s %-8s %s\n' "$name" "$status" "$detail"
  done
  echo
}
# Under the device tool: the table so far and one archive of the logs and run files into $OUT,
# which takes back at most 8 files of 16 MiB. After every step, so that a command killed at its
# limit still leaves what was done.
snapshot() {
  if [[ -n "${OUT:-}" && -n "$out" && -d "$out" && "$out" != "$OUT" ]]; then
    print_table >"$OUT/device-check-table.txt"
    local files
    files=$(cd "$out" && ls -- *.log *.txt *.json 2>/dev/null)
    # The run files too while they fit (the summary of each is in its log anyway).
    if (($(du -sk "$out" | cut -f1) < 15000)); then files=$(cd "$out" && ls); fi
    # shellcheck disable=SC2086  # file names without spaces, ours
    [[ -n "$files" ]] && timeout 60 tar -C "$out" -czf "$OUT/device-check-logs.tar.gz" $files
  fi
  return 0
}
# The table, the snapshot, exit with $1.
finish() {
  print_table
  snapshot
  exit "$1"
}
die() {
  echo "device-check: FAILED: $*" >&2
  results+=("device-check|FAILED|$(head -1 <<<"$*" | cut -c1-100)")
  finish 1
}
left() { echo $((deadline - SECONDS)); }
# Seconds for the next step: at most $1, never past the deadline, never 0 (timeout 0 would mean
# no limit).
slice() {
  local l
  l=$(left)
  ((l < 1)) && l=1
  if ((l < $1)); then echo "$l"; else echo "$1"; fi
}
need_time() { (($(left) >= $1)) || die "time budget (${budget}s) used up before: $2"; }
# The row of a `shakedown` step named $1 that ended with exit code $2 (its output in $3; $4: the
# detail when it passed, its verdict without one). Exit 1 is a failed check when the run got to
# its verdict, else mpirun's own failure to launch; 2 a usage error (this script's command or a
# rule the GPU path adds); each of those is a failure here, with its reason.
judge() {
  local name=$1 rc=$2 log=$3 detail=${4:-} verdict
  verdict=$(sed -n 's/^verdict: \(.\{0,70\}\).*/\1/p' "$log" | tail -1)
  case $rc in
    0)
      results+=("$name|OK|${detail:-$verdict}")
      return 0
      ;;
    1)
      if [[ -n "$verdict" ]]; then
        results+=("$name|FAILED|checks failed: $verdict")
      else
        results+=("$name|FAILED|exit code 1 before any verdict (the launch?), see $log")
      fi
      ;;
    2) results+=("$name|FAILED|usage error: $(grep -m 1 -E '^shakedown: .*(error|: [a-z_]+\.[a-z_]+: )' "$log" | cut -c12-110)") ;;
    124 | 137) results+=("$name|FAILED|killed at its time limit, see $log") ;;
    *) results+=("$name|FAILED|exit code $rc, see $log") ;;
  esac
  failed=1
  tail -30 "$log"
  return 1
}
# Whether step $1 can run: shakedown built (or carried), CUDA sees the GPU unless $3 is "any",
# and at least $2 s left; else an N/A row saying which was missing.
can_run() {
  local why=""
  if [[ -z "$shakedown_bin" ]]; then
    why=${phase_skip:-no shakedown CLI (its build failed)}
  elif [[ -n "$no_cuda" && "${3:-}" != any ]]; then
    why="CUDA sees no GPU"
  elif (($(left) <= $2)); then
    why="time budget: $(left)s left of ${budget}s (SHAKEDOWN_DEVICE_BUDGET_S)"
  fi
  [[ -z "$why" ]] && return 0
  results+=("$1|N/A|$why")
  return 1
}

# NCCL next to the CUDA toolkit (as on the build machines), else the one pip installed for
# PyTorch (GPU images often have only that). Prints "<lib dir> <include dir or empty>".
find_nccl() {
  local cuda=${CUDA_HOME:-/usr/local/cuda}
  if compgen -G "$cuda/lib64/libnccl.so*" >/dev/null; then
    echo "$cuda/lib64 $cuda/include"
    return 0
  fi
  local dir
  dir=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null) || return 1
  [[ -n "$dir" && -e "$dir/lib/libnccl.so.2" ]] || return 1
  if [[ -f "$dir/include/nccl.h" ]]; then echo "$dir/lib $dir/include"; else echo "$dir/lib"; fi
}

# A shared library the GPU machine must provide (e.g. libcublasLt.so.13): next to the CUDA
# toolkit, else in pip's nvidia-* wheels (PyTorch images). Prints its folder.
find_cuda_lib() {
  local cuda=${CUDA_HOME:-/usr/local/cuda} so=$1 dir found
  if [[ -e "$cuda/lib64/$so" ]]; then
    echo "$cuda/lib64"
    return 0
  fi
  while IFS= read -r dir; do
    [[ -d "$dir" ]] || continue
    found=$(find "$dir" -maxdepth 4 -name "$so" 2>/dev/null | head -1)
    if [[ -n "$found" ]]; then
      dirname "$found"
      return 0
    fi
  done < <(python3 -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null)
  return 1
}

# The files a bundle is built from (the sources, the build files and what the build compiles in:
# configs/, scripts/build_info.cmake) with their sha256, one per line in C order; found, not
# asked of git (the GPU machine's copy of the tree may have no .git).
sources_list() {
  find src kernels tests/gpu tests/CMakeLists.txt bench cmake CMakeLists.txt configs \
    scripts/build_info.cmake -type f ! -name '*.md' -print0 2>/dev/null | LC_ALL=C sort -z |
    xargs -0 sha256sum
}

# Ninja for new build folders when installed (CMake's default generator; a folder already
# configured keeps its own).
if [[ -z "${CMAKE_GENERATOR:-}" ]] && command -v ninja >/dev/null; then export CMAKE_GENERATOR=Ninja; fi

# ---------------------------------------------------------------- --bundle (build machine side)
if [[ "${1:-}" == "--bundle" ]]; then
  bbuild=${SHAKEDOWN_BUILD_DIR:-build-device-bundle-build}
  # The sources as built: taken before the build and compared after packing (an edit meanwhile
  # may or may not be in the programs).
  sources_before=$(sources_list)
  # --as-needed: the programs use only a few of the libraries the CMake targets link, and the
  # bundle must stay small enough to carry (libnccl itself is taken from the GPU machine).
  cmake -S . -B "$bbuild" -DCMAKE_BUILD_TYPE=Release -DSHAKEDOWN_CUDA=ON \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed >/dev/null || die "configure (-DSHAKEDOWN_CUDA=ON)"
  cmake --build "$bbuild" -j "$jobs" --target gpu_tests bench_gemm_gpu shakedown ||
    die "build of gpu_tests, bench_gemm_gpu and shakedown"
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/bin" "$stage/lib"
  cp "$bbuild/tests/gpu_tests" "$bbuild/bench/bench_gemm_gpu" "$bbuild/shakedown" "$stage/bin/"
  # Open MPI's runtime under usr/, laid out as under its prefix so that OPAL_PREFIX moves all of
  # it: its libraries and components (less those for fabrics and languages a GPU check does not
  # use: OFI, PSM, verbs, usNIC, OpenSHMEM, Fortran, Java), its help texts, orted (a singleton's
  # daemon) and mpirun; PMIx's plugins and help texts beside it.
  prefix=$(ompi_info --path prefix --parsable | cut -d: -f3)
  for what in libdir pkgdatadir; do
    dir=$(ompi_info --path "$what" --parsable | cut -d: -f3)
    [[ "$dir" == "$prefix"/* ]] || die "Open MPI's $what ($dir) is not under its prefix ($prefix)"
    mkdir -p "$stage/usr/$(dirname "${dir#"$prefix"/}")"
    cp -a "$dir" "$stage/usr/${dir#"$prefix"/}"
  done
  ompi_lib="$stage/usr/$(ompi_info --path libdir --parsable | cut -d: -f3 | sed "s|^$prefix/||")"
  rm -rf "$ompi_lib"/pkgconfig "$ompi_lib"/libmpi_java* "$ompi_lib"/libmpi_mpifh* \
    "$ompi_lib"/libmpi_use* "$ompi_lib"/liboshmem* "$ompi_lib"/libompitrace*
  for c in btl_ofi mtl_ofi mtl_psm mtl_psm2 btl_openib btl_usnic 'spml_*' 'sshmem_*' 'atomic_*' \
    'scoll_*' 'memheap_*'; do
    # shellcheck disable=SC2086  # the component names are globs
    rm -f "$ompi_lib"/openmpi*/mca_$c.so
  done
  mkdir -p "$stage/usr/bin"
  cp "$prefix/bin/orted" "$prefix/bin/orterun" "$stage/usr/bin/"
  ln -s orterun "$stage/usr/bin/mpirun"
  multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  if [[ -d "/usr/lib/$multiarch/pmix2" ]]; then
    mkdir -p "$stage/usr/lib/$multiarch"
    cp -a "/usr/lib/$multiarch/pmix2" "$stage/usr/lib/$multiarch/"
  fi
  # UCX's transport modules (the link scan), found by UCX_MODULE_DIR; hwloc's PCI plugin (the
  # GPUs' and NICs' places in the topology), by HWLOC_PLUGINS_PATH.
  [[ -d "/usr/lib/$multiarch/ucx" ]] && cp -a "/usr/lib/$multiarch/ucx" "$stage/lib/ucx"
  if [[ -e "/usr/lib/$multiarch/hwloc/hwloc_pci.so" ]]; then
    mkdir -p "$stage/lib/hwloc"
    cp "/usr/lib/$multiarch/hwloc/hwloc_pci.so" "$stage/lib/hwloc/"
  fi
  # Everything ldd resolves for all of those, except the C/C++ runtime and the rest of glibc (the
  # GPU machine's own must match its libc), the driver, NCCL and cuBLAS(Lt) (hundreds of MB;
  # found there).
  mapfile -t loaded < <(find "$stage/bin" "$stage/usr" "$stage/lib" -type f \( -perm -u+x -o \
    -name '*.so*' \))
  ldd "${loaded[@]}" 2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u |
    while read -r name path; do
      case "$name" in
        libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libresolv.so* | \
          libnss_* | libanl.so* | libutil.so* | libmvec.so* | libthread_db.so* | libstdc++.so* | \
          libgcc_s.so* | libcuda.so* | libnvidia* | libnccl.so* | libcublas.so* | libcublasLt.so*) ;;
        *) [[ -e "$stage/lib/$name" ]] || cp -L "$path" "$stage/lib/$name" ;;
      esac
    done
  [[ "$(sources_list)" == "$sources_before" ]] ||
    die "sources changed while the bundle was built: run scripts/device-check.sh --bundle again"
  rm -rf "$bundle"
  mkdir -p "$bundle"
  echo "$sources_before" >"$bundle/SOURCES"
  # Compressed: the libraries (OpenBLAS alone is 36 MB) must fit what travels to the GPU machine.
  tar -C "$stage" -cf - bin lib usr | gzip -9 >"$bundle/bundle.tar.gz"
  {
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
      "$(git status --short 2>/dev/null | wc -l) changed files"
    echo "sources $(sha256sum <"$bundle/SOURCES" | cut -c1-16)"
    echo "needs $(objdump -T "${loaded[@]}" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
    # The cuBLASLt soname the loader asks for (core/gpu_libraries.cpp: the headers' major).
    echo "cublaslt libcublasLt.so.$(sed -n 's/^#define CUBLAS_VER_MAJOR \([0-9]*\).*/\1/p' \
      "${CUDA_HOME:-/usr/local/cuda}/include/cublas_api.h" | head -1)"
    echo "mpi Open MPI $(ompi_info --version 2>/dev/null | sed -n 's/^Open MPI v//p' | head -1)"
  } >"$bundle/BUILT"
  size=$(du -sm "$bundle" | cut -f1)
  say "bundle in $bundle/ (${size} MB); on the GPU machine run scripts/device-check.sh with" \
    "$bundle/ carried along"
  ((size < 56)) || say "warning: ${size} MB is close to what travels to the GPU machine (64 MiB" \
    "with the working tree)"
  exit 0
fi

# ---------------------------------------------------------------- is there a GPU?
if ! command -v nvidia-smi >/dev/null; then
  say "SKIPPED: no GPU here (nvidia-smi not found); nothing to check"
  exit 0
fi
gpus=$(timeout 30 nvidia-smi -L 2>&1)
if ! grep -q '^GPU ' <<<"$gpus"; then
  say "SKIPPED: nvidia-smi lists no GPU: ${gpus:-no output}"
  exit 0
fi
say "GPUs:"
while IFS= read -r line; do echo "  $line"; done <<<"$gpus"
gpu_name=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
# The python3 that has h5py, for reading the run files (Debian's python3-h5py is /usr/bin's).
py=python3
/usr/bin/python3 -c 'import h5py' 2>/dev/null && py=/usr/bin/python3

# A folder of its own for each run (the run files are never overwritten: a rerun on the same
# machine would otherwise stop at the first).
out=${SHAKEDOWN_DEVICE_OUT:-$build/device-check}/$(date +%Y%m%d-%H%M%S)
mkdir -p "$out" || die "cannot create $out"

# ---------------------------------------------------------------- build, or use the bundle
shakedown_bin=""
phase_skip=""
bench_bin=""
bench_skip=""
if [[ -f "$bundle/bundle.tar.gz" ]]; then
  say "using the prebuilt bundle in $bundle/ (no build): $(tr '\n' ' ' <"$bundle/BUILT" 2>/dev/null)"
  changed=$(diff <(cat "$bundle/SOURCES" 2>/dev/null) <(sources_list) | sed -n 's/^[<>] [0-9a-f]*  //p' |
    sort -u | head -3 | tr '\n' ' ')
  if [[ ! -f "$bundle/SOURCES" || -n "$changed" ]]; then
    results+=("bundle built from these sources|FAILED|${changed:+differ: $changed}rerun scripts/device-check.sh --bundle")
    failed=1
  fi
  read -r nccl_lib _ < <(find_nccl) || die "no libnccl.so.2 on this machine (looked in" \
    "${CUDA_HOME:-/usr/local/cuda}/lib64 and python's nvidia.nccl)"
  say "NCCL from $nccl_lib"
  # cuBLASLt from this machine, as NCCL: shakedown loads it at first use (never linked, so ldd
  # does not list it), by the soname of the headers it was built with (BUILT says which).
  # Looked for before the bundle's libraries are on any path (python3 finds the wheels).
  lt_dirs=""
  lt_so=$(sed -n 's/^cublaslt //p' "$bundle/BUILT" 2>/dev/null)
  for so in ${lt_so:-libcublasLt.so.13}; do
    if lib_dir=$(find_cuda_lib "$so"); then
      lt_dirs="$lt_dirs:$lib_dir"
      say "$so from $lib_dir"
    else
      say "$so not found here: the cuBLASLt tests will say so"
    fi
  done
  unpacked=$(mktemp -d)
  trap 'rm -rf "$unpacked"' EXIT
  timeout 120 tar -C "$unpacked" -xzf "$bundle/bundle.tar.gz" || die "cannot unpack $bundle/bundle.tar.gz"
  extra=""
  [[ -d /usr/local/nvidia/lib64 ]] && extra=":/usr/local/nvidia/lib64"
  libs="$unpacked/lib:$nccl_lib$lt_dirs$extra"
  # Only the bundle's programs see its libraries (this machine's python3 keeps its own).
  run_env=(env "LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  gpu_tests="$unpacked/bin/gpu_tests"
  missing=$(timeout 60 "${run_env[@]}" ldd -r "$gpu_tests" 2>&1 | grep -E 'not found|undefined symbol')
  [[ -z "$missing" ]] || die "the bundle's gpu_tests cannot load here:"$'\n'"$missing"
  if [[ -x "$unpacked/bin/bench_gemm_gpu" ]]; then
    bench_bin="$unpacked/bin/bench_gemm_gpu"
  else
    bench_skip="the bundle has no bench_gemm_gpu (built before it existed): rebuild it"
  fi
  if [[ -x "$unpacked/bin/shakedown" && -d "$unpacked/usr/bin" ]]; then
    # Open MPI moved to where the bundle is unpacked: OPAL_PREFIX relocates its components and
    # help texts, PMIx's likewise; its libraries (lib/) and orted/mpirun (usr/bin) come first.
    ompi_libdir=$(find "$unpacked/usr" -name 'libmpi.so*' -printf '%h\n' | head -1)
    pmix_prefix=$(find "$unpacked/usr" -maxdepth 3 -type d -name pmix2 | head -1)
    run_env=(env "LD_LIBRARY_PATH=$libs:$ompi_libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      "OPAL_PREFIX=$unpacked/usr" "PATH=$unpacked/usr/bin:$PATH"
      "UCX_MODULE_DIR=$unpacked/lib/ucx" "HWLOC_PLUGINS_PATH=$unpacked/lib/hwloc")
    # PMIx's prefix moves its help texts, not where it looks for its plugins.
    [[ -n "$pmix_prefix" ]] && run_env+=("PMIX_PREFIX=$pmix_prefix"
      "PMIX_PKGDATADIR=$pmix_prefix/share/pmix"
      "PMIX_MCA_mca_base_component_path=$pmix_prefix/lib/pmix")
    missing=$(timeout 60 "${run_env[@]}" ldd -r "$unpacked/bin/shakedown" 2>&1 | grep -E 'not found|undefined symbol')
    if [[ -n "$missing" ]]; then
      results+=("bundle's shakedown loads here|FAILED|$(head -1 <<<"$missing" | cut -c1-90)")
      failed=1
      phase_skip="the bundle's shakedown cannot load here"
    elif ! timeout -k 5 60 "${run_env[@]}" "$unpacked/bin/shakedown" --version >"$out/version.log" 2>&1; then
      results+=("bundle's shakedown --version|FAILED|see $out/version.log")
      failed=1
      phase_skip="the bundle's shakedown does not start here"
    else
      shakedown_bin="$unpacked/bin/shakedown"
    fi
  else
    phase_skip="the bundle has no shakedown CLI or Open MPI runtime (built before it had them): rebuild it"
    # Nor Open MPI's components: the GPU test that needs the host training step (MPI) skips,
    # saying so.
    run_env+=("SHAKEDOWN_GPU_TESTS_NO_MPI=the bundle carries no Open MPI installation")
  fi
else
  # shakedown's Debian packages (MPI, HDF5, ...) are what a build here needs; on a machine that
  # has none, apt without network can wait minutes per mirror before failing: say what to do
  # at once instead.
  if ! dpkg-query -W libopenmpi-dev libhdf5-dev >/dev/null 2>&1 && [[ -z "${SHAKEDOWN_DEVICE_INSTALL:-}" ]]; then
    die "no bundle, and shakedown's packages (libopenmpi-dev, libhdf5-dev, ...) are not" \
      "installed here: build a bundle on a machine that has them (scripts/device-check.sh" \
      "--bundle) and carry $bundle/ here, or set SHAKEDOWN_DEVICE_INSTALL=1 to run" \
      "scripts/install-deps.sh first"
  fi
  need_time 60 "installing dependencies"
  if ! timeout -k 10 "$(slice 150)" bash scripts/install-deps.sh >"$out/install.log" 2>&1; then
    die "shakedown's packages are missing and scripts/install-deps.sh could not install them" \
      "(no network or no apt? see $out/install.log). Build a bundle on a machine that has them:" \
      "scripts/device-check.sh --bundle, and carry $bundle/ to this one."
  fi
  command -v nvcc >/dev/null || [[ -x ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc ]] ||
    die "no nvcc (CUDA toolkit) on this machine: the CUDA parts cannot be built"
  nccl_args=()
  if read -r nccl_lib nccl_inc < <(find_nccl) && [[ "$nccl_lib" != "${CUDA_HOME:-/usr/local/cuda}/lib64" ]]; then
    say "NCCL from $nccl_lib (not next to the CUDA toolkit)"
    nccl_args=(-DNCCL_LIBRARY="$nccl_lib/libnccl.so.2")
    [[ -n "${nccl_inc:-}" ]] && nccl_args+=(-DNCCL_INCLUDE_DIR="$nccl_inc")
    export LD_LIBRARY_PATH="$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  need_time 60 "configure"
  timeout -k 10 "$(slice 120)" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DSHAKEDOWN_CUDA=ON "${nccl_args[@]}" >"$out/configure.log" 2>&1 ||
    die "configure with -DSHAKEDOWN_CUDA=ON (see $out/configure.log):"$'\n'"$(tail -20 "$out/configure.log")"
  need_time 60 "build of gpu_tests"
  timeout -k 10 "$(slice 300)" cmake --build "$build" -j "$jobs" --target gpu_tests >"$out/build.log" 2>&1 ||
    die "build of gpu_tests (see $out/build.log):"$'\n'"$(grep -m 20 -E 'error|Error' "$out/build.log")"
  gpu_tests="$build/tests/gpu_tests"
  # The GEMM benchmark: one more file on top of gpu_tests' libraries, so seconds; its failure to
  # build does not hide the test results.
  if (($(left) > 60)) &&
    timeout -k 10 "$(slice 120)" cmake --build "$build" -j "$jobs" --target bench_gemm_gpu >>"$out/build.log" 2>&1; then
    bench_bin="$build/bench/bench_gemm_gpu"
  else
    results+=("build bench_gemm_gpu|FAILED|see $out/build.log")
    failed=1
  fi
  # The CLI only for the phases step; its failure to build does not hide the test results.
  if (($(left) > 120)) &&
    timeout -k 10 "$(slice 180)" cmake --build "$build" -j "$jobs" --target shakedown >>"$out/build.log" 2>&1; then
    shakedown_bin="$build/shakedown"
  else
    results+=("build shakedown|FAILED|see $out/build.log")
    failed=1
  fi
fi

# ---------------------------------------------------------------- GPU tests
need_time 30 "gpu_tests"
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
timeout -k 10 "$(slice 200)" "${run_env[@]}" "$gpu_tests" --gtest_color=no >"$out/gpu_tests.log" 2>&1
rc=$?
# One row per finished test: "[       OK ] Suite.Name (12 ms)", FAILED / SKIPPED alike, and a
# parameterised one's "[  FAILED  ] All/Suite.Name/all_reduce, where GetParam() = ... (12 ms)".
while read -r status name ms; do
  results+=("$name|$status|$ms ms")
  [[ "$status" == FAILED ]] && failed=1
done < <(sed -nE 's/^\[ *(OK|FAILED|SKIPPED) *\] ([^ ,]+)(, where .*)? \(([0-9]+) ms\)$/\1 \2 \4/p' "$out/gpu_tests.log")
if ! grep -q '^\[==========\] .* ran\.' "$out/gpu_tests.log"; then
  # Killed (timeout: 124) or crashed before gtest's summary: name the test that was running.
  last=$(grep '^\[ RUN      \]' "$out/gpu_tests.log" | tail -1 | sed 's/^\[ RUN      \] //')
  results+=("${last:-gpu_tests}|CRASHED|exit code $rc$( ((rc == 124)) && echo ' (time budget)')")
  failed=1
elif ((rc != 0 && !failed)); then
  results+=("gpu_tests|FAILED|exit code $rc")
  failed=1
fi
# The device training step against the host step (share of weights moved the same way per
# tensor) and its step time.
grep -E '^(gelu|swiglu)[^:]* tensor [0-9]+:|^step .* TFLOP/s|GB/s' "$out/gpu_tests.log" | head -24
# The GPU tests skip, saying "no CUDA device: <why>", when CUDA sees no GPU (driver, hidden
# devices): nothing on the GPU was checked.
no_cuda=$(grep -m 1 'no CUDA device' "$out/gpu_tests.log")

snapshot

# ---------------------------------------------------------------- train phase on the GPU
if can_run "shakedown run train (device-resident, cuBLASLt + NCCL)" 40; then
  # 1 rank: the synthetic FP8 training step device-resident on the GPU (cuBLASLt GEMMs, NCCL;
  # every dimension a multiple of 16): step time, TFLOP/s per rank and MFU against the
  # platform's FP8 figure, from the train block of the summary.
  timeout -k 10 "$(slice 120)" "${run_env[@]}" scripts/mpirun-local.sh -n 1 "$shakedown_bin" run --phases train \
    --set train.engine=cublaslt --set train.hidden=4096 --set train.heads=32 \
    --set train.layers=4 --set train.seq_len=2048 --set train.steps=10 \
    --out "$out/train.h5" >"$out/train.log" 2>&1
  judge "shakedown run train (device-resident, cuBLASLt + NCCL)" $? "$out/train.log" \
    "$(grep -m 1 -E '^  step ' "$out/train.log" | cut -c3-60)"
  sed -n '/^train (/,/^$/p' "$out/train.log" | head -8
fi
snapshot

# ---------------------------------------------------------------- devices phase on the GPU
if can_run "shakedown run devices (GPU memory, PCIe)" 40; then
  # 1 rank on this GPU: HBM copy and triad kernels and the copy-engine D2D copy over 1 GiB
  # buffers, pinned H2D/D2H (one way and both), free memory and the PCIe link under load. Pairs
  # need two GPUs and say so. The figures against this GPU's HBM peak and PCIe Gen5 x16 (~63 GB/s
  # a direction), and copy kernel / cudaMemcpyAsync D2D (target >= 0.9), from the file.
  case $gpu_name in
    *H200*) hbm="4800 H200" ;;
    *H100*NVL*) hbm="3900 H100-NVL" ;;
    *H100*PCIe*) hbm="2000 H100-PCIe" ;;
    *H100*) hbm="3350 H100-SXM" ;;
    *) hbm="" ;;
  esac
  timeout -k 10 "$(slice 90)" "${run_env[@]}" scripts/mpirun-local.sh -n 1 "$shakedown_bin" run --phases devices \
    --set devices.path=cuda --out "$out/devices.h5" >"$out/devices.log" 2>&1
  judge "shakedown run devices (GPU memory, PCIe)" $? "$out/devices.log"
  sed -n '/^devices (/,/^$/p; /devices\./p' "$out/devices.log" | cut -c1-200 | head -16
  # shellcheck disable=SC2086,SC2015  # $hbm is "GB/s name" or empty; a failed summary is no failure
  [[ -f "$out/devices.h5" ]] && timeout -k 5 "$(slice 30)" "$py" - "$out/devices.h5" $hbm <<'PY' || true
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
hbm = (float(sys.argv[2]), sys.argv[3]) if len(sys.argv) > 3 else None
med = lambda t: float(np.nanmedian(f["/devices/memory/%s/alone_GBps" % t][()]))
refs = [("h2d", 63, "of PCIe Gen5 x16"), ("d2h", 63, "of PCIe Gen5 x16")]
if hbm:
    refs = [(t, hbm[0], "of %s %.1f TB/s" % (hbm[1], hbm[0] / 1000)) for t in ("copy", "triad", "ce_copy")] + refs
for t, ref, what in refs:
    if "/devices/memory/" + t in f:
        print("  devices %-8s %8.1f GB/s  %3.0f%% %s" % (t, med(t), 100 * med(t) / ref, what))
if "/devices/memory/ce_copy" in f:
    print("  copy kernel / cudaMemcpyAsync D2D: %.2f (target >= 0.9)" % (med("copy") / med("ce_copy")))
if "/devices/pcie_current_GTs" in f:
    g = lambda n: f["/devices/" + n][()][0]
    print("  PCIe under load: %g GT/s x%g of %g GT/s x%g" % (g("pcie_current_GTs"), g("pcie_current_width"), g("pcie_max_GTs"), g("pcie_max_width")))
print("  free after the runtime started: %.1f GiB" % (f["/devices/free_bytes"][()][0] / 2**30))
PY
fi
snapshot

# ---------------------------------------------------------------- collectives + gemm phases
if can_run "shakedown run collectives (nccl) + gemm (cublaslt)" 60; then
  # 1 rank on this GPU: the collectives on NCCL, then the gemm phase on cuBLASLt (the smoke
  # layer's shapes plus 8192^3, every output hashed and 16 rows checked against fp64). An exit
  # code 2 (usage) is reported with its message.
  # shellcheck disable=SC2086  # SHAKEDOWN_DEVICE_RUN_ARGS is a list of words
  timeout -k 10 "$(slice 200)" "${run_env[@]}" scripts/mpirun-local.sh -n 1 "$shakedown_bin" run --phases collectives,gemm \
    --set collectives.backend=nccl --set 'collectives.dtypes=[float32,bfloat16,fp8_e4m3]' \
    --set collectives.nccl_sizes=8:1G --set gemm.engine=cublaslt --out "$out/phases.h5" \
    ${SHAKEDOWN_DEVICE_RUN_ARGS:-} >"$out/phases.log" 2>&1
  judge "shakedown run collectives (nccl) + gemm (cublaslt)" $? "$out/phases.log"
  # The gemm table (TFLOP/s per shape, error against fp64) and the verdict.
  sed -n '/^gemm$/,$p' "$out/phases.log" | head -30
fi

# ---------------------------------------------------------------- telemetry of that run
# The sampler read this GPU through the real NVML while the phases ran (docs/telemetry.md):
# the power, clock and temperature range per phase, the throttle reasons seen, what NVML could
# not give, and the telemetry checks.
if [[ -f "$out/phases.h5" ]]; then
  grep -E 'telemetry' "$out/phases.log" | cut -c1-200 | head -8
  if timeout -k 5 "$(slice 30)" "$py" - "$out/phases.h5" >"$out/telemetry.txt" 2>&1 <<'PY'; then
import sys, h5py
g = h5py.File(sys.argv[1], "r")["/telemetry/node0"]
a = lambda k: g.attrs[k].decode() if isinstance(g.attrs[k], bytes) else str(g.attrs[k])
dev, sig = a("devices").split(","), a("signals").split(",")
stats, phases = g["stats"][()], a("phases").split(",")
ch = lambda d, s: [i for i in range(len(dev)) if dev[i] == d and sig[i] == s]
gpus = sorted({d for d in dev if d.startswith("gpu")})
if not gpus:
    print("  no GPU sampled: " + a("notes").replace("\n", "; "))
    sys.exit(1)
for d in gpus:
    for p, name in enumerate(phases):
        row = []
        for s, unit in (("power", "W"), ("sm_clock", "MHz"), ("temperature", "C"), ("utilization", "%")):
            c = ch(d, s)
            if c:
                lo, hi = stats[p, c[0], 0], stats[p, c[0], 2]
                row.append("%s %.0f..%.0f %s" % (s, lo, hi, unit))
        print("  %s %-12s %s" % (d, name, ", ".join(row)))
print("  events: " + (a("events").replace("\n", "; ") or "none"))
print("  not sampled: " + (a("notes").replace("\n", "; ") or "nothing"))
xid = [n for n in a("notes").split("\n") if "Xid" in n]
print("  Xid watch: " + ("; ".join(xid) if xid else "every GPU (NVML's event set, else the kernel log)"))
print("  sampler cost: %.0f us per sample" % float(g.attrs["sample_cost_us"]))
PY
    cat "$out/telemetry.txt"
    results+=("telemetry through NVML during that run|OK|$(grep -m 1 -E '^  gpu' "$out/telemetry.txt" | cut -c3-70)")
  else
    cat "$out/telemetry.txt"
    results+=("telemetry through NVML during that run|FAILED|$(grep -m 1 -E 'no GPU sampled|Error' "$out/telemetry.txt" | cut -c3-90)")
    failed=1
  fi
fi
snapshot

# ---------------------------------------------------------------- GEMM benchmark
# FP8 vs BF16 cuBLASLt at 8192^3 and a transformer layer's shapes; about 20 s on an H200 (the
# GEMMs take under a second, generating and uploading 1.2 GB of operands the rest).
if [[ -n "$bench_bin" && -z "$no_cuda" ]] && (($(left) > 30)); then
  timeout -k 10 "$(slice 120)" "${run_env[@]}" "$bench_bin" >"$out/bench_gemm_gpu.log" 2>&1
  brc=$?
  cat "$out/bench_gemm_gpu.log"
  # One row per shape: "name m n k fp8 bf16 ratio".
  while read -r shape m n k fp8 bf16 ratio; do
    results+=("bench_gemm_gpu $shape ${m}x${n}x${k}|OK|FP8 $fp8, BF16 $bf16 TFLOP/s, FP8/BF16 $ratio")
  done < <(awk 'NF == 7 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/' "$out/bench_gemm_gpu.log")
  verdict=$(grep -m 1 -E '^(FP8 at 8192|SKIP:)' "$out/bench_gemm_gpu.log")
  case $brc in
    0)
      if [[ "$verdict" == SKIP:* ]]; then
        results+=("bench_gemm_gpu|SKIPPED|${verdict#SKIP: }")
      else
        results+=("bench_gemm_gpu FP8 8192^3 target|OK|${verdict#FP8 at 8192^3: }")
      fi
      ;;
    1)
      results+=("bench_gemm_gpu FP8 8192^3 target|FAILED|${verdict#FP8 at 8192^3: }")
      failed=1
      ;;
    124)
      results+=("bench_gemm_gpu|CRASHED|exit code 124 (time budget)")
      failed=1
      ;;
    *)
      results+=("bench_gemm_gpu|FAILED|exit code $brc: $(grep -m 1 'error' "$out/bench_gemm_gpu.log" | cut -c1-100)")
      failed=1
      ;;
  esac
elif [[ -n "$bench_skip" ]]; then
  results+=("bench_gemm_gpu|N/A|$bench_skip")
elif [[ -n "$no_cuda" ]]; then
  results+=("bench_gemm_gpu|N/A|CUDA sees no GPU")
elif [[ -n "$bench_bin" ]]; then
  results+=("bench_gemm_gpu|N/A|time budget: $(left)s left of ${budget}s (SHAKEDOWN_DEVICE_BUDGET_S)")
fi
snapshot

# ---------------------------------------------------------------- audit of the real node
if can_run "shakedown audit (this node)" 20 any; then
  # The real driver, CUDA, NCCL and cuBLASLt versions, MIG, compute capability against the
  # build's architectures, GPUDirect RDMA, ACS: one rank, seconds (docs/audit.md).
  timeout -k 10 "$(slice 60)" "${run_env[@]}" "$shakedown_bin" audit --out "$out/audit.h5" \
    --json "$out/audit.json" >"$out/audit.log" 2>&1
  judge "shakedown audit (this node)" $? "$out/audit.log"
  sed -n '/^inventory/p; /audit\./p' "$out/audit.log" | cut -c1-200 | head -14
  timeout -k 5 "$(slice 30)" "${run_env[@]}" "$shakedown_bin" summary --detail "$out/audit.h5" 2>/dev/null |
    grep -E '^      (build\.|cublaslt|gpu\.0\.|gpu\.kernel|gdr\.|pcie\.acs|nccl\.)' | head -14
fi
snapshot

# ---------------------------------------------------------------- linkscan from GPU memory
if can_run "shakedown run linkscan (memory auto)" 40; then
  # 2 ranks as 2 virtual nodes on the one GPU, linkscan.memory auto: GPU memory when this UCX
  # reports CUDA among its memory types (its cuda transport installed), else host memory and
  # the reason. The coverage line says which; the title says "from GPU memory" when it was.
  timeout -k 10 "$(slice 90)" "${run_env[@]}" scripts/mpirun-local.sh -n 2 "$shakedown_bin" run --virtual-nodes 2 \
    --phases linkscan --set linkscan.bytes=16MiB --set linkscan.reps=3 \
    --out "$out/linkscan.h5" >"$out/linkscan.log" 2>&1
  lrc=$?
  # Which memory it sent from: GPU memory, or host memory (auto's fallback) and why.
  memory=$(grep -m 1 "linkscan.coverage" "$out/linkscan.log" | grep -oE '; (host|GPU) memory[^;]*\)' | cut -c3-80)
  judge "shakedown run linkscan (memory auto)" $lrc "$out/linkscan.log" "${memory:-memory not reported}"
  sed -n '/^linkscan (/,/^$/p' "$out/linkscan.log" | head -6
  grep -m 1 "linkscan.coverage" "$out/linkscan.log" | cut -c1-300
fi

# ---------------------------------------------------------------- table
say "logs in $out/; $((SECONDS))s of ${budget}s used"
if [[ -n "$no_cuda" ]]; then
  # nvidia-smi lists a GPU that CUDA cannot use (driver and runtime disagree, devices hidden):
  # nothing on it was checked, which is what this check is for.
  results+=("CUDA sees the GPU nvidia-smi lists|FAILED|$(cut -c1-100 <<<"$no_cuda")")
  failed=1
fi
if ((failed)); then
  grep -A3 -E '^.*Failure$' "$out/gpu_tests.log" 2>/dev/null | head -40
  say "FAILED (details in $out/)"
  finish 1
fi
say "PASSED"
finish 0
