// `shakedown plan`: rankfile, mpirun line and srun options for a layout, and one GPU's memory
// budget for a model (no MPI, no GPU needed).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "app/app.hpp"
#include "app/common.hpp"
#include "core/error.hpp"
#include "topology/plan.hpp"
#include "train/memory.hpp"

namespace shakedown {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

void print_layout(const PlanOptions& options) {
  PlanRequest request;
  request.nodes = options.nodes;
  request.ranks_per_node = options.ranks_per_node;
  if (!options.hosts_file.empty()) request.hosts = read_hostfile(options.hosts_file);
  request.topology_xml = options.topology_xml;
  Plan plan = make_plan(request);
  std::cout << "# Open MPI rankfile (save as " << request.rankfile_path << ")\n"
            << plan.rankfile << "\n# mpirun with that rankfile\n"
            << plan.mpirun_rankfile_command
            << "\n\n# mpirun, mapping and binding without a rankfile\n"
            << plan.mpirun_command << "\n\n# Slurm (sbatch/srun options)\n"
            << plan.srun_options << "\n";
  if (!plan.notes.empty()) {
    std::cout << "\n# notes\n";
    for (const auto& n : plan.notes) std::cout << "# " << n << "\n";
  }
}

// The preset's own sequence length when --model names a preset and nothing else sets seq_len
// (no --seq-len, no --set train.seq_len, no --config): the built-in config's 128 tokens would
// understate a Llama 2 step's activations 32 times. 0 otherwise.
std::int64_t preset_seq_len(const PlanOptions& o) {
  if (!o.model || o.seq_len || !o.config_path.empty()) return 0;
  for (const std::string& set : o.sets) {
    if (set.starts_with("train.seq_len=")) return 0;
  }
  return train::preset_context(*o.model);
}

// The plan's flags as config overrides, so they are checked as the config's keys; `flags` gets
// each override's flag as typed ("--seq-len -5"), for the errors.
std::vector<std::string> train_sets(const PlanOptions& o,
                                    std::vector<std::pair<std::string, std::string>>& flags) {
  std::vector<std::string> sets = o.sets;
  auto add = [&](const char* key, const char* flag, const auto& value) {
    if (!value) return;
    std::string text;
    if constexpr (std::is_same_v<std::decay_t<decltype(*value)>, std::string>) {
      text = *value;
    } else {
      text = std::to_string(*value);
    }
    sets.push_back(std::string("train.") + key + "=" + text);
    flags.emplace_back(sets.back(), std::string(flag) + " " + text);
  };
  add("model", "--model", o.model);
  add("layers", "--layers", o.layers);
  add("tp", "--tp", o.tp);
  add("dp", "--dp", o.dp);
  add("zero", "--zero", o.zero);
  add("micro_batch", "--micro-batch", o.micro_batch);
  add("seq_len", "--seq-len", o.seq_len);
  if (const std::int64_t context = preset_seq_len(o); context > 0) {
    sets.push_back("train.seq_len=" + std::to_string(context));
    flags.emplace_back(sets.back(), "--model " + *o.model + " (its sequence length " +
                                        std::to_string(context) + ")");
  }
  if (o.sequence_parallel) sets.emplace_back("train.sequence_parallel=true");
  return sets;
}

// The config as the plan's flags make it; an error about one of them names the flag as typed,
// not the override it became.
Config plan_config(const PlanOptions& o) {
  std::vector<std::pair<std::string, std::string>> flags;
  const std::vector<std::string> sets = train_sets(o, flags);
  try {
    return load_run_config(o.config_path, sets);
  } catch (const UsageError& e) {
    std::string message = e.what();
    for (const auto& [set, flag] : flags) {
      const std::string as_set = "--set \"" + set + "\"";
      if (const auto at = message.find(as_set); at != std::string::npos) {
        message.replace(at, as_set.size(), flag);
      }
    }
    throw UsageError(message);
  }
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string describe(const train::ModelShape& s) {
  return s.name + " (" + std::to_string(s.layers) + " layers" +
         (s.preset_layers > 0 && s.layers < s.preset_layers
              ? " of " + std::to_string(s.preset_layers)
              : "") +
         ", hidden " + std::to_string(s.hidden) + ", heads " + std::to_string(s.heads) + "/" +
         std::to_string(s.kv_heads) + " kv, ffn " + std::to_string(s.ffn_hidden) + " " +
         (s.mlp == train::Mlp::kSwiglu ? "swiglu" : "gelu") + ", vocab " + std::to_string(s.vocab) +
         ", " + fixed(static_cast<double>(train::parameter_count(s)) / 1e9, 2) + " B parameters)";
}

void print_budget_text(const train::MemoryBudget& b, const std::string& heading,
                       const std::string& setting, const std::string& largest_what) {
  std::cout << "# memory budget per GPU: " << heading << "\n# " << setting << "\n";
  std::printf("  %-34s %10s  %s\n", "item", "GiB", "counted as");
  for (const train::MemoryItem& i : b.items) {
    std::printf("  %-34s %10.2f  %s\n", i.name.c_str(), i.bytes / kGiB, i.basis.c_str());
  }
  std::printf("  %-34s %10.2f\n", "total", b.total_bytes / kGiB);
  if (b.device_bytes <= 0) {
    std::cout << "# no --gpu given: nothing to fit against (e.g. --gpu h200-sxm or --gpu 80)\n";
    return;
  }
  std::printf("  %-34s %10.2f\n", ("device " + b.device).c_str(), b.device_bytes / kGiB);
  if (b.fits) {
    std::printf("fits: yes, headroom %.2f GiB (%.0f%% of the device)", b.headroom_bytes / kGiB,
                100.0 * b.headroom_bytes / b.device_bytes);
  } else {
    std::printf("fits: NO, %.2f GiB over", -b.headroom_bytes / kGiB);
  }
  if (b.largest_fitting > 0) {
    std::printf("; largest %s that fits: %lld\n", largest_what.c_str(),
                static_cast<long long>(b.largest_fitting));
  } else {
    std::printf("; not even a %s of 1 fits\n", largest_what.c_str());
  }
}

nlohmann::ordered_json budget_json(const train::MemoryBudget& b, const train::ModelShape& s) {
  nlohmann::ordered_json j;
  j["kind"] = b.inference ? "inference" : "training";
  j["model"] = {{"name", s.name},
                {"layers", s.layers},
                {"hidden", s.hidden},
                {"ffn_hidden", s.ffn_hidden},
                {"heads", s.heads},
                {"kv_heads", s.kv_heads},
                {"vocab", s.vocab},
                {"mlp", s.mlp == train::Mlp::kSwiglu ? "swiglu" : "gelu"},
                {"parameters", train::parameter_count(s)}};
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (const train::MemoryItem& i : b.items) {
    items.push_back({{"name", i.name}, {"bytes", i.bytes}, {"basis", i.basis}});
  }
  j["items"] = items;
  j["total_bytes"] = b.total_bytes;
  if (b.device_bytes > 0) {
    j["device"] = {{"name", b.device}, {"bytes", b.device_bytes}};
    j["fits"] = b.fits;
    j["headroom_bytes"] = b.headroom_bytes;
    j[b.inference ? "largest_concurrency" : "largest_micro_batch"] = b.largest_fitting;
  } else {
    j["device"] = nullptr;
  }
  return j;
}

// With --nodes and --ranks-per-node the world is theirs; without, tp x dp ranks and a TP group
// that fills (part of) a node. A plan checks the rules a GPU run must meet.
train::LayoutFacts layout_facts(const PlanOptions& o, const TrainConfig& t) {
  if (o.nodes > 0 && o.ranks_per_node > 0) {
    return {o.nodes * o.ranks_per_node, o.ranks_per_node, true, true};
  }
  return {t.tp * (t.dp > 0 ? t.dp : 1), t.tp, true, false};
}

void print_budget(const PlanOptions& o) {
  const Config config = plan_config(o);
  const TrainConfig& t = config.train;
  const train::ModelShape shape = train::model_shape(t);
  train::DeviceMemory device;
  if (!o.gpu.empty()) device = train::parse_device_memory(o.gpu);
  train::MemoryBudget budget;
  std::string setting;
  std::string largest_what;
  if (o.inference) {
    train::InferenceRequest q;
    q.shape = shape;
    q.tp = t.tp;
    train::check_parallel(shape, t, layout_facts(o, t));
    q.context = o.context;
    q.concurrency = o.concurrency;
    q.weight_bytes = o.weight_bytes;
    budget = train::inference_budget(q, device.bytes);
    setting = "inference: tp " + std::to_string(t.tp) + ", context " + std::to_string(o.context) +
              ", concurrency " + std::to_string(o.concurrency) + ", " + fixed(o.weight_bytes, 1) +
              " B per weight";
    largest_what = "concurrency";
  } else {
    train::TrainingRequest q;
    q.shape = shape;
    q.parallel = train::check_parallel(shape, t, layout_facts(o, t));
    q.micro_batch = t.micro_batch;
    q.seq_len = t.seq_len;
    q.recompute = train::parse_recompute(o.recompute);
    q.bucket_mb = t.bucket_mb;
    budget = train::training_budget(q, device.bytes);
    setting =
        "training: tp " + std::to_string(q.parallel.tp) + ", dp " + std::to_string(q.parallel.dp) +
        ", zero " + std::to_string(q.parallel.zero) + ", micro-batch " +
        std::to_string(t.micro_batch) + ", seq_len " + std::to_string(t.seq_len) +
        (preset_seq_len(o) > 0 ? " (the model's own; --seq-len to change)" : "") + ", recompute " +
        o.recompute + (q.parallel.sequence_parallel ? ", sequence parallel" : "");
    largest_what = "micro-batch";
  }
  budget.device = device.name;
  // The checkpoint this training config writes (checkpoint.from_train sizes its shards so).
  std::optional<train::Parallel> trained;
  if (!o.inference) trained = train::check_parallel(shape, t, layout_facts(o, t));
  if (o.format == "json") {
    nlohmann::ordered_json j = budget_json(budget, shape);
    j["setting"] = setting;
    if (trained) {
      const train::CheckpointShard first = train::checkpoint_shard(shape, *trained, 0);
      const train::CheckpointShard other = train::checkpoint_shard(shape, *trained, 1);
      j["checkpoint"] = {{"dp_rank0_bytes", first.total()},
                         {"other_rank_bytes", trained->dp > 1 ? other.total() : 0},
                         {"total_bytes", train::checkpoint_bytes(shape, *trained)}};
    }
    std::cout << j.dump(2) << "\n";
  } else {
    print_budget_text(budget, describe(shape), setting, largest_what);
    if (trained) {
      const train::CheckpointShard first = train::checkpoint_shard(shape, *trained, 0);
      const train::CheckpointShard other = train::checkpoint_shard(shape, *trained, 1);
      std::printf(
          "checkpoint (DLIO's sizing, checkpoint.from_train): %.2f GiB on %d GPUs; per "
          "rank %.2f GiB on DP rank 0 (bf16 model %.2f + fp32 optimizer %.2f)",
          static_cast<double>(train::checkpoint_bytes(shape, *trained)) / kGiB,
          trained->tp * trained->dp, static_cast<double>(first.total()) / kGiB,
          static_cast<double>(first.model_bytes) / kGiB,
          static_cast<double>(first.optimizer_bytes) / kGiB);
      if (trained->dp > 1) {
        std::printf(", %.2f GiB on the others", static_cast<double>(other.total()) / kGiB);
      }
      std::printf("\n");
    }
  }
}

}  // namespace

int plan_command(const PlanOptions& options) {
  const bool layout = options.nodes > 0 || options.ranks_per_node > 0;
  const bool memory = options.model || !options.config_path.empty() || !options.sets.empty() ||
                      options.inference || !options.gpu.empty() || options.tp || options.dp ||
                      options.zero || options.layers || options.micro_batch || options.seq_len;
  if (!layout && !memory) {
    throw UsageError(
        "plan: nothing to plan; give --nodes N --ranks-per-node R (a rankfile and launch "
        "lines) and/or --model NAME (one GPU's memory budget), e.g. shakedown plan --model "
        "llama2-70b --tp 8 --dp 16 --seq-len 4096 --gpu h200-sxm");
  }
  if (layout && (options.nodes <= 0 || options.ranks_per_node <= 0)) {
    throw UsageError("plan: --nodes and --ranks-per-node go together (a layout needs both)");
  }
  if (layout && options.format == "json") {
    throw UsageError(
        "plan: --format json is for the memory budget; leave out --nodes and "
        "--ranks-per-node, or print the layout as text");
  }
  // The budget first: it refuses a bad layout (tp against the ranks per node) before printing
  // anything, so a plan that fails leaves no rankfile to be redirected into a file as if it had
  // worked.
  if (memory) print_budget(options);
  if (layout && memory) std::cout << "\n";
  if (layout) print_layout(options);
  return 0;
}

}  // namespace shakedown
