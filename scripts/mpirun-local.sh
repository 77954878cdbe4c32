#!/usr/bin/env bash
# mpirun for one machine: as root or not, more ranks than cores allowed, no binding.
# Usage: scripts/mpirun-local.sh -n 4 [more mpirun options] PROGRAM [ARGS...]
set -euo pipefail
if [[ $(id -u) -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Containers often forbid the ptrace-based single-copy path of the shared-memory transport.
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
exec mpirun --oversubscribe --bind-to none "$@"
