#include "record/checkpoint_rows.hpp"

#include "record/schema.hpp"

namespace shakedown {

void write_checkpoint(RunWriter& w, const CheckpointRecord& r) {
  namespace c = schema::checkpoint;
  const std::string path = schema::kCheckpointGroup;
  const std::uint64_t it = r.iters, n = r.world;
  w.batch([&] {
    w.set_attr(path, c::kAttrLayout, r.layout);
    w.set_attr(path, c::kAttrApi, r.api);
    w.set_attr(path, c::kAttrDir, r.dir);
    w.set_attr(path, c::kAttrFsType, r.fs_type);
    w.set_attr(path, c::kAttrFsMount, r.fs_mount);
    w.set_attr(path, c::kAttrFsOptions, r.fs_options);
    w.set_attr(path, c::kAttrFsNodeLocal, std::int64_t{r.fs_node_local ? 1 : 0});
    w.set_attr(path, c::kAttrBlockSize, r.block_size);
    w.set_attr(path, c::kAttrFsync, std::int64_t{r.fsync ? 1 : 0});
    w.set_attr(path, c::kAttrDirectIo, std::int64_t{r.direct_io ? 1 : 0});
    w.set_attr(path, c::kAttrKept, r.kept);
    w.set_attr(path, c::kAttrAsync, std::int64_t{r.async ? 1 : 0});
    if (r.async) {
      w.write_array(path, c::kSnapshotS, r.snapshot_s, {it, n});
      w.write_array(path, c::kStepMsBefore, r.step_ms_before, {it, n});
      w.write_array(path, c::kStepMsDuring, r.step_ms_during, {it, n});
      w.write_array(path, c::kStepsDuring, r.steps_during, {it, n});
    }
    w.write_array(path, c::kBytes, r.bytes, {n});
    w.write_array(path, c::kReadsShardOf, r.reads_shard_of, {n});
    for (const auto& [d, v] : {std::pair{&c::kOpenS, &r.open_s},
                               {&c::kWriteS, &r.write_s},
                               {&c::kFsyncS, &r.fsync_s},
                               {&c::kCloseS, &r.close_s},
                               {&c::kReadS, &r.read_s},
                               {&c::kWriteStartS, &r.write_start_s},
                               {&c::kWriteEndS, &r.write_end_s},
                               {&c::kReadStartS, &r.read_start_s},
                               {&c::kReadEndS, &r.read_end_s}}) {
      w.write_array(path, *d, *v, {it, n});
    }
    for (const auto& [d, v] : {std::pair{&c::kVerifyOk, &r.verify_ok},
                               {&c::kBadOffset, &r.bad_offset},
                               {&c::kCacheDropped, &r.cache_dropped}}) {
      w.write_array(path, *d, *v, {it, n});
    }
    w.write_array(path, c::kWriteGBps, r.write_gbps, {it});
    w.write_array(path, c::kReadGBps, r.read_gbps, {it});
    w.write_array(path, c::kRestoreS, r.restore_s, {it});
  });
}

}  // namespace shakedown
