#!/usr/bin/env bash
# The link scan over a real (virtual) network: four pretend nodes, each in its own network
# namespace (and UTS namespace: its own host name, as Open MPI needs one per node), joined by
# veth pairs through a bridge in a fifth namespace where mpirun runs. Addresses exist only inside
# these namespaces; the test creates and removes all of them. Ranks are started in their node's
# namespace by an rsh agent; UCX runs over TCP on the veth ("fab0" in every node). One node's
# veth is then slowed with tc (a token bucket both ways): the scan must convict that node and
# no other. Skips with the reason where namespaces cannot be made (not root, no ip/tc/unshare).
# This is one host pretending to be four: every byte still crosses the kernel's network stack
# and the shaped device, but not a NIC or a switch.
source "$(dirname "$0")/lib.sh"

[[ $(id -u) -eq 0 ]] || skip "network namespaces need root"
for tool in ip tc unshare; do
  command -v "$tool" >/dev/null || skip "$tool not found (iproute2, util-linux)"
done
ns=sdls$$
net=192.168.231
nodes=4
cleanup() {
  local i
  for ((i = 0; i < nodes; i++)); do ip netns del "${ns}n$i" 2>/dev/null; done
  ip netns del "${ns}h" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "${ns}h" 2>"$TMP/ip" || skip "cannot make a network namespace: $(cat "$TMP/ip")"
ip -n "${ns}h" link set lo up
ip -n "${ns}h" link add br0 type bridge || skip "cannot make a bridge in a namespace"
ip -n "${ns}h" addr add "$net.1/24" dev br0
ip -n "${ns}h" link set br0 up
for ((i = 0; i < nodes; i++)); do
  ip netns add "${ns}n$i" || fail "namespace ${ns}n$i"
  ip -n "${ns}n$i" link set lo up
  ip link add "${ns}a$i" type veth peer name "${ns}b$i" || skip "cannot make veth pairs"
  ip link set "${ns}a$i" netns "${ns}n$i"
  ip link set "${ns}b$i" netns "${ns}h"
  ip -n "${ns}n$i" link set "${ns}a$i" name fab0
  ip -n "${ns}n$i" addr add "$net.$((10 + i))/24" dev fab0
  ip -n "${ns}n$i" link set fab0 up
  ip -n "${ns}h" link set "${ns}b$i" master br0 up
  echo "$net.$((10 + i)) slots=1" >>"$TMP/hostfile"
done

# Open MPI's rsh agent: the host is an address of ours; start the command in its namespace,
# under its own host name.
cat >"$TMP/rsh.sh" <<EOF
#!/usr/bin/env bash
while [[ \$# -gt 0 ]]; do
  case "\$1" in
    -o|-p|-l|-i|-F) shift 2 ;;
    -*) shift ;;
    *) host=\$1; shift; break ;;
  esac
done
i=\$((\${host##*.} - 10))
exec ip netns exec ${ns}n\$i unshare --uts bash -c "hostname node\$i && \$*"
EOF
chmod +x "$TMP/rsh.sh"

# One pair at a time (concurrent=false): the four pretend hosts share this machine's cores, which
# their distinct host names hide from the scan. Pass marks loosened as in test_linkscan.sh.
scan() {
  local out=$1
  shift
  ip netns exec "${ns}h" env UCX_TLS=tcp "$MPIRUN" -n "$nodes" --hostfile "$TMP/hostfile" \
    --mca plm_rsh_agent "$TMP/rsh.sh" --mca rtc ^hwloc --mca pml ob1 --mca btl self,tcp \
    --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" -x UCX_TLS \
    "$SHAKEDOWN" run --phases linkscan --set linkscan.rails=fab0 --set linkscan.concurrent=false \
    --set linkscan.bytes=256KiB --set linkscan.window=8 --set linkscan.reps=3 \
    --set linkscan.lat_iters=50 --set linkscan.bw_fraction=0.25 --set linkscan.lat_factor=20 \
    "$@" --out "$out"
}

scan "$TMP/healthy.h5" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/stdout" "$TMP/stderr"; fail "healthy network: exit $rc"; }
expect_in "$TMP/stdout" "run.coverage: 4 ranks on 4 nodes" "four nodes, not virtual ones"
expect_in "$TMP/stdout" "rail 0 \(fab0\): 6 pair\(s\) of 4 nodes" "every pair over fab0"
expect_in "$TMP/stdout" "\[PASS\] linkscan.nodes" "no node convicted on a healthy network"
expect_in "$TMP/stdout" "\[PASS\] linkscan.transport: every pair of a rail used the same transport \(tcp/fab0\)" "TCP over the veth"
expect_in "$TMP/stdout" "one pair at a time" "pairs in turn"

# Node 2's veth, both ends, to 200 Mbit/s (about 100x under the others here).
for dev in "-n ${ns}n2 fab0" "-n ${ns}h ${ns}b2"; do
  read -r flag where name <<<"$dev"
  tc "$flag" "$where" qdisc add dev "$name" root tbf rate 200mbit burst 64kb latency 100ms \
    2>"$TMP/tc" || skip "tc cannot shape a veth here: $(cat "$TMP/tc")"
done
scan "$TMP/slow.h5" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
[[ $rc -eq 1 ]] || { cat "$TMP/stdout" "$TMP/stderr"; fail "shaped node: exit $rc, expected 1"; }
expect_in "$TMP/stdout" "\[FAIL\] linkscan.nodes: node 2 \(host node2\) is slow with every partner" "the shaped node convicted"
expect_in "$TMP/stdout" "scontrol update NodeName=node2 State=DRAIN" "drain line for node2"
"$SHAKEDOWN" summary --detail "$TMP/slow.h5" >"$TMP/detail"
if grep -E "node [013] \(host [^)]*\) is slow with every partner|node [013] \(host [^)]*\): convicted|\[FAIL\] linkscan.links" "$TMP/detail"; then
  fail "only node 2 may be convicted"
fi
sed -n '/^linkscan/,/^$/p' "$TMP/stdout"
pass "linkscan over network namespaces: a tc-shaped node convicted, no other"
