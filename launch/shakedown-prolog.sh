#!/usr/bin/env bash
# Slurm prolog: `shakedown audit` of this node before a job starts on it. A node that fails the
# audit (a check failed, exit 1, or the audit hung or crashed, exit 3) is drained with
# shakedown's reason, which `sinfo -R` shows, and the prolog fails, so Slurm requeues the job
# elsewhere. A mistake of ours (exit 2: a bad config; exit 4: a bug) is logged and lets the job
# run: a typo in the audit config must not drain the whole cluster.
#
# Install (launch/README.md "Slurm prolog"): copy this file to every node, e.g.
# /etc/slurm/shakedown-prolog.sh, and in slurm.conf set
#   Prolog=/etc/slurm/shakedown-prolog.sh
# Settings come from shakedown-prolog.conf beside this file, else /etc/shakedown/prolog.conf
# (shell assignments; Slurm gives a prolog almost no environment):
#   SHAKEDOWN=/opt/shakedown/bin/shakedown   the binary (default: shakedown on PATH)
#   AUDIT_CONFIG=/etc/shakedown/audit.yaml   its config: audit, topology and checks sections
#                                            (default: none, the built-in defaults)
#   AUDIT_ARGS="--set audit.driver_min=570"  more arguments for `shakedown audit`
#   AUDIT_TIMEOUT=60                         seconds before the audit counts as hung
#   LOG_DIR=/var/log/shakedown               each audit's output and JSON report, per job
#                                            (default: /var/log/shakedown; kept for failures)
#   DRAIN=1                                  0: fail the prolog without draining
# Undrain after fixing the node: scontrol update NodeName=<node> State=RESUME
set -uo pipefail
# Slurm starts a prolog with no PATH; Open MPI's singleton start-up looks its helpers up in it.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
conf="$here/shakedown-prolog.conf"
[[ -r "$conf" ]] || conf=/etc/shakedown/prolog.conf
# shellcheck source=/dev/null
[[ -r "$conf" ]] && source "$conf"
SHAKEDOWN=${SHAKEDOWN:-shakedown}
AUDIT_CONFIG=${AUDIT_CONFIG:-}
AUDIT_ARGS=${AUDIT_ARGS:-}
AUDIT_TIMEOUT=${AUDIT_TIMEOUT:-60}
LOG_DIR=${LOG_DIR:-/var/log/shakedown}
DRAIN=${DRAIN:-1}
node=${SLURMD_NODENAME:-$(hostname -s)}
job=${SLURM_JOB_ID:-none}

say() { logger -t shakedown-prolog "job $job on $node: $*" 2>/dev/null || true; echo "shakedown-prolog: $*" >&2; }

mkdir -p "$LOG_DIR" 2>/dev/null || LOG_DIR=${TMPDIR:-/tmp}
log="$LOG_DIR/audit-$node-$job.txt"
args=(audit --json "$LOG_DIR/audit-$node-$job.json")
[[ -n "$AUDIT_CONFIG" ]] && args+=(--config "$AUDIT_CONFIG")
# shellcheck disable=SC2206  # AUDIT_ARGS is a word list by design
args+=($AUDIT_ARGS)

# A job step's MPI variables must not make the audit think it is one of many ranks.
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_RANK -u SLURM_PROCID \
  timeout --kill-after=10 "$AUDIT_TIMEOUT" "$SHAKEDOWN" "${args[@]}" >"$log" 2>&1
rc=$?

case $rc in
  0)
    rm -f "$log" "$LOG_DIR/audit-$node-$job.json"
    exit 0
    ;;
  1)
    # The first failed finding, as the audit's own drain line words it; else its verdict.
    reason=$(sed -n 's/^  scontrol update NodeName=[^ ]* State=DRAIN Reason="\(.*\)"$/\1/p' "$log" | head -n 1)
    [[ -n "$reason" ]] || reason="shakedown audit: $(sed -n 's/^verdict: //p' "$log" | head -n 1)"
    ;;
  124 | 137)
    reason="shakedown audit did not finish in ${AUDIT_TIMEOUT} s (a hung driver or file system?)"
    ;;
  3)
    reason="shakedown audit: $(grep -m1 -E 'shakedown: error|^verdict:' "$log" | sed 's/^shakedown: error: //')"
    ;;
  *)
    say "audit could not run (exit $rc; see $log): not draining for a mistake of the audit's own"
    exit 0
    ;;
esac
reason=${reason//\"/\'}
reason="${reason:0:200} [$log]"
say "$reason"
if [[ "$DRAIN" == 1 ]]; then
  scontrol update NodeName="$node" State=DRAIN Reason="$reason" ||
    say "scontrol could not drain $node"
fi
exit 1
