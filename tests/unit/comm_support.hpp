#pragma once
// Lists the comm unit tests share: every data type and every collective.
#include "comm/collectives.hpp"
#include "comm/dtype.hpp"

namespace shakedown::testing_support {

inline constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16,
                                       DType::kInt32,   DType::kFp8E4M3,  DType::kFp8E5M2};
inline constexpr CollectiveKind kAllKinds[] = {
    CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
    CollectiveKind::kBroadcast, CollectiveKind::kAllToAll,  CollectiveKind::kSendRecv};

}  // namespace shakedown::testing_support
