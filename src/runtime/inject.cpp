#include "runtime/inject.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "config/config.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace shakedown {

const std::vector<std::string>& fault_kinds() {
  static const std::vector<std::string> kKinds = {"stall", "fail",    "corrupt", "sdc",
                                                  "slow",  "ioerror", "drift"};
  return kKinds;
}

namespace {

// The phases that plant each kind (empty = any phase): a fault nobody plants must not pass
// silently.
std::vector<std::string_view> planted_in(std::string_view kind) {
  if (kind == "corrupt") return {"collectives", "checkpoint"};
  if (kind == "sdc") return {"gemm", "train"};
  if (kind == "slow") return {"devices", "linkscan", "collectives", "gemm", "train", "checkpoint"};
  if (kind == "ioerror") return {"checkpoint"};
  if (kind == "drift") return {"inventory"};
  return {};
}

}  // namespace

namespace {

[[noreturn]] void fail(std::string_view spec, const std::string& why) {
  throw UsageError("--inject " + std::string(spec) + ": " + why + ". Syntax: " + fault_syntax());
}

}  // namespace

std::string fault_syntax() {
  return "KIND:rank=R,phase=P[,step=N][,seconds=S][,factor=F]. Kinds: stall (any phase: rank R "
         "sleeps S seconds, by default longer than any time-out, before the phase, or before its "
         "N-th measured step); fail (any phase: rank R fails at its start); corrupt (collectives: "
         "one element of rank R's results; checkpoint: one byte of its shard on disk, between "
         "write and restore); sdc (gemm: one bit of the output; train: of the reduced gradient, "
         "or with train.zero 1 of the parameters after the all-gather; step=N: the N-th step); "
         "slow (factor=F > 1, default 2; devices: each of the rank's copies, and every pair copy "
         "with its device, takes F times as long; gemm: each GEMM does; train: all forward and "
         "backward compute does; collectives: the rank arrives late at each iteration; "
         "checkpoint: each block the rank writes or reads does; linkscan: slow:node=N or "
         "slow:link=A-B, the node's or the link's transfers); ioerror (checkpoint: the rank's "
         "first write call fails with EIO, as failing storage does, in every checkpoint or the "
         "N-th); drift:node=N,field=F[,value=V] (inventory: node N records V, or its own value "
         "with '-drifted', for the inventory field or fact F, e.g. kernel, gpu.driver, "
         "nic.mlx5_0.fw: the audit's self-test)";
}

FaultSpec parse_fault(std::string_view spec) {
  FaultSpec f;
  f.text = std::string(spec);
  auto colon = spec.find(':');
  f.kind = std::string(spec.substr(0, colon));
  if (std::find(fault_kinds().begin(), fault_kinds().end(), f.kind) == fault_kinds().end()) {
    fail(spec, "unknown fault kind '" + f.kind + "'");
  }
  if (colon == std::string_view::npos) {
    fail(spec, f.kind == "drift" ? "missing node= and field=" : "missing rank= and phase=");
  }
  bool have_node = false;
  bool have_rank = false;
  bool have_phase = false;
  std::vector<std::string> keys;  // each once: a repeated one would be taken silently
  std::string_view rest = spec.substr(colon + 1);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    auto eq = item.find('=');
    if (eq == std::string_view::npos) fail(spec, "'" + std::string(item) + "' is not key=value");
    std::string key(item.substr(0, eq));
    std::string value(item.substr(eq + 1));
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      fail(spec, "'" + key + "' is given twice; give each key once");
    }
    keys.push_back(key);
    if (f.kind == "drift" && key == "node") {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), f.node);
      if (ec != std::errc{} || p != value.data() + value.size() || f.node < 0) {
        fail(spec, "node must be a node number >= 0, got '" + value + "'");
      }
      have_node = true;
    } else if (f.kind == "slow" && (key == "node" || key == "link")) {
      // The link scan's faults sit on nodes and links: node=N, link=A-B.
      const auto number = [&](std::string_view text, int& out) {
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
        return ec == std::errc{} && p == text.data() + text.size() && out >= 0;
      };
      if (key == "node") {
        if (!number(value, f.node))
          fail(spec, "node must be a node number >= 0, got '" + value + "'");
      } else {
        const auto dash = value.find('-');
        int a = -1, b = -1;
        if (dash == std::string::npos || !number(std::string_view(value).substr(0, dash), a) ||
            !number(std::string_view(value).substr(dash + 1), b) || a == b) {
          fail(spec, "link must be two different node numbers, A-B, got '" + value + "'");
        }
        f.node = std::min(a, b);
        f.peer_node = std::max(a, b);
      }
      if (have_node) fail(spec, "give node= or link=, once");
      have_node = true;
    } else if (f.kind == "drift" && key == "field") {
      // The names themselves are checked against the inventory's in app/ (topology/ owns them).
      if (value.empty() ||
          value.find_first_not_of(
              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
              std::string::npos) {
        fail(spec,
             "field must be an inventory field or fact name such as kernel, gpu.driver or "
             "nic.mlx5_0.fw, got '" +
                 value + "'");
      }
      f.field = value;
    } else if (f.kind == "drift" && key == "value") {
      f.value = value;
    } else if (f.kind == "drift" && key == "rank") {
      fail(spec, "a drift fault is planted on a node (node=N), not a rank");
    } else if (key == "rank") {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), f.rank);
      if (ec != std::errc{} || p != value.data() + value.size() || f.rank < 0) {
        fail(spec, "rank must be a rank number >= 0, got '" + value + "'");
      }
      have_rank = true;
    } else if (key == "phase") {
      const auto& phases = pipeline_phases();
      if (std::find(phases.begin(), phases.end(), value) == phases.end()) {
        fail(spec, "unknown phase '" + value + "' (phases: " + join(phases) + ")");
      }
      if (const auto only = planted_in(f.kind);
          !only.empty() && std::find(only.begin(), only.end(), value) == only.end()) {
        std::vector<std::string> names(only.begin(), only.end());
        fail(spec, "a " + f.kind + " fault is planted only in phase " + join(names, " or ") +
                       ", not in '" + value + "'");
      }
      f.phase = value;
      have_phase = true;
    } else if (key == "seconds" && f.kind == "stall") {
      char* end = nullptr;
      f.seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(f.seconds) ||
          f.seconds < 0) {
        fail(spec, "seconds must be a number >= 0, got '" + value + "'");
      }
    } else if (key == "factor" && f.kind == "slow") {
      char* end = nullptr;
      f.factor = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(f.factor) ||
          f.factor <= 1 || f.factor > 1000) {
        fail(spec, "factor must be a number > 1 (at most 1000), got '" + value + "'");
      }
    } else if (key == "step" && (f.kind == "stall" || f.kind == "sdc" || f.kind == "ioerror")) {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), f.step);
      if (ec != std::errc{} || p != value.data() + value.size() || f.step < 0) {
        fail(spec, "step must be a step number >= 0, got '" + value + "'");
      }
    } else {
      fail(spec, "unknown key '" + key + "'");
    }
  }
  if (f.kind == "drift") {
    if (!have_node) fail(spec, "missing node=N");
    if (f.field.empty()) fail(spec, "missing field=F");
    if (have_phase && f.phase != "inventory") fail(spec, "a drift fault is planted in inventory");
    f.phase = "inventory";
    f.rank = -1;
    return f;
  }
  if (f.kind == "slow" && (have_node || (have_phase && f.phase == "linkscan"))) {
    if (!have_phase || f.phase != "linkscan") {
      fail(spec, "node= and link= slow the link scan only: add phase=linkscan");
    }
    if (have_rank)
      fail(spec, "the link scan slows a node (node=N) or a link (link=A-B), not a rank");
    if (!have_node)
      fail(spec, "the link scan slows a node (node=N) or a link (link=A-B): missing one");
    f.rank = -1;
    return f;
  }
  if (!have_rank) fail(spec, "missing rank=R");
  if (!have_phase) fail(spec, "missing phase=P");
  return f;
}

void validate_faults(const std::vector<FaultSpec>& faults, int world_size, int node_count,
                     const std::vector<std::string>& phases_run) {
  for (const auto& f : faults) {
    if (f.node >= node_count) {
      throw UsageError("--inject " + f.text + ": node " + std::to_string(f.node) +
                       " does not exist; this run has nodes 0.." + std::to_string(node_count - 1) +
                       (node_count == 1 ? " (add --virtual-nodes 2 to pretend several)" : ""));
    }
    if (f.peer_node >= node_count) {
      throw UsageError("--inject " + f.text + ": node " + std::to_string(f.peer_node) +
                       " does not exist; this run has nodes 0.." + std::to_string(node_count - 1));
    }
    if (f.rank >= world_size) {
      throw UsageError("--inject " + f.text + ": rank " + std::to_string(f.rank) +
                       " does not exist; this run has ranks 0.." + std::to_string(world_size - 1));
    }
    if (std::find(phases_run.begin(), phases_run.end(), f.phase) == phases_run.end()) {
      throw UsageError("--inject " + f.text + ": phase '" + f.phase +
                       "' is not run (phases: " + join(phases_run) +
                       "); the fault would never be planted. Add it with --phases");
    }
  }
}

std::vector<FaultSpec> FaultPlan::for_node(std::string_view kind, int node) const {
  std::vector<FaultSpec> out;
  for (const auto& f : faults_) {
    if (f.kind == kind && f.node == node) out.push_back(f);
  }
  return out;
}

std::optional<FaultSpec> FaultPlan::find(std::string_view kind, int rank,
                                         std::string_view phase) const {
  for (const auto& f : faults_) {
    if (f.kind == kind && f.rank == rank && f.phase == phase) return f;
  }
  return std::nullopt;
}

}  // namespace shakedown
