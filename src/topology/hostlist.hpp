#pragma once
// Slurm hostlist expressions ("gpu[001-018,020],login1"), as slurm.conf, topology.conf,
// SLURM_JOB_NODELIST and `scontrol show hostnames` use them. Pure string code.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shakedown {

// Expands a hostlist expression into host names, in order. Commas outside brackets separate
// entries; each bracket holds comma-separated numbers or ranges "a-b" (a <= b), and several
// brackets in one entry multiply ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). A range keeps the
// width of its first number when it has leading zeros ("[08-10]" -> 08 09 10). Throws
// std::invalid_argument saying what is wrong (unbalanced bracket, bad range, empty entry, more
// than `limit` names).
std::vector<std::string> expand_hostlist(std::string_view expression, std::size_t limit = 1000000);

}  // namespace shakedown
