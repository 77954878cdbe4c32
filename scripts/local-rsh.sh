#!/usr/bin/env bash
# An rsh/ssh stand-in for Open MPI's launcher: drops the ssh options and the host name and runs the
# command on this machine. With a hostfile of loopback addresses (127.0.0.2, 127.0.0.3) it lets
# one machine play several hosts. Never use it for real clusters.
while [[ $# -gt 0 ]]; do
  case "$1" in
    -o|-p|-l|-i|-F) shift 2 ;;
    -*) shift ;;
    *) shift; break ;;  # the host name
  esac
done
exec bash -c "$*"
