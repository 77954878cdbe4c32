#pragma once
// Column descriptors: how each record type (RankInfo, CheckResult, NodeInventory, GpuInfo,
// NicInfo) maps to the columns of its table. One list per record, used by the writer to build the
// table and by the reader to rebuild the records, so the two cannot disagree. Internal to record/.
#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "record/findings.hpp"
#include "record/h5.hpp"
#include "topology/rank_info.hpp"

namespace shakedown::tables {

// A GPU or NIC row of /inventory/gpus or /inventory/nics: the node it belongs to + the device.
struct NodeGpu {
  int node_index = 0;
  GpuInfo gpu;
};
struct NodeNic {
  int node_index = 0;
  NicInfo nic;
};
struct NodeFactRow {
  int node_index = 0;
  NodeFact fact;
};

// How a member type is stored: ints as int64, std::uint64_t as uint64, enums as their name.
template <class V>
struct Storage;
template <>
struct Storage<std::string> {
  using type = std::string;
};
template <>
struct Storage<int> {
  using type = std::int64_t;
};
template <>
struct Storage<std::int64_t> {
  using type = std::int64_t;
};
template <>
struct Storage<std::uint64_t> {
  using type = std::uint64_t;
};
template <>
struct Storage<double> {
  using type = double;
};
template <>
struct Storage<CheckStatus> {
  using type = std::string;
};

CheckStatus parse_check_status(const std::string& text);  // UsageError when unknown

template <class V>
typename Storage<V>::type to_storage(const V& v) {
  if constexpr (std::is_same_v<V, CheckStatus>) {
    return to_string(v);
  } else {
    return static_cast<typename Storage<V>::type>(v);
  }
}

// Row `r` of `column` as a V; numbers convert between the numeric column types so a reader
// accepts what h5py or a later schema may have written. A string/number mismatch is a UsageError.
template <class V>
V from_column(const h5::Column& column, std::size_t r) {
  return std::visit(
      [&](const auto& values) -> V {
        using S = typename std::decay_t<decltype(values)>::value_type;
        if constexpr (std::is_same_v<S, std::string>) {
          if constexpr (std::is_same_v<V, std::string>) {
            return values[r];
          } else if constexpr (std::is_same_v<V, CheckStatus>) {
            return parse_check_status(values[r]);
          } else {
            throw UsageError("column '" + column.name + "' holds text where a number belongs");
          }
        } else {
          if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, CheckStatus>) {
            throw UsageError("column '" + column.name + "' holds numbers where text belongs");
          } else {
            return static_cast<V>(values[r]);
          }
        }
      },
      column.values);
}

template <class Row>
struct Field {
  const char* name;
  h5::ColumnValues empty;  // an empty column of the stored type
  std::function<void(const Row&, h5::ColumnValues&)> append;
  std::function<void(Row&, const h5::Column&, std::size_t)> assign;
};

// A field reached through `ref(row)`: a generic lambda returning a reference to the member (const
// for a const row), possibly nested.
template <class Row, class Ref>
Field<Row> field(const char* name, Ref ref) {
  using V = std::decay_t<decltype(ref(std::declval<Row&>()))>;
  using S = typename Storage<V>::type;
  return Field<Row>{name, h5::ColumnValues{std::vector<S>{}},
                    [ref](const Row& row, h5::ColumnValues& values) {
                      std::get<std::vector<S>>(values).push_back(to_storage(ref(row)));
                    },
                    [ref](Row& row, const h5::Column& column, std::size_t r) {
                      ref(row) = from_column<V>(column, r);
                    }};
}

template <class Row, class M>
Field<Row> field(const char* name, M Row::*member) {
  return field<Row>(
      name, [member](auto& row) -> auto& { return row.*member; });
}

template <class Row, class Sub, class M>
Field<Row> field(const char* name, Sub Row::*sub, M Sub::*member) {
  return field<Row>(
      name, [ sub, member ](auto& row) -> auto& { return (row.*sub).*member; });
}

template <class Row>
h5::Table to_table(const std::vector<Row>& rows, const std::vector<Field<Row>>& fields) {
  h5::Table table;
  for (const Field<Row>& f : fields) {
    table.columns().push_back(h5::Column{f.name, f.empty});
    h5::ColumnValues& values = table.columns().back().values;
    for (const Row& row : rows) f.append(row, values);
  }
  return table;
}

// Missing columns keep the record's defaults (files from older writers, foreign tables).
template <class Row>
std::vector<Row> from_table(const h5::Table& table, const std::vector<Field<Row>>& fields) {
  std::vector<Row> rows(table.rows());
  for (const Field<Row>& f : fields) {
    const h5::Column* column = table.find(f.name);
    if (column == nullptr) continue;
    for (std::size_t r = 0; r < rows.size(); ++r) f.assign(rows[r], *column, r);
  }
  return rows;
}

const std::vector<Field<RankInfo>>& rank_fields();
const std::vector<Field<CheckResult>>& check_fields();
const std::vector<Field<Finding>>& finding_fields();
const std::vector<Field<NodeInventory>>& node_fields();
const std::vector<Field<NodeGpu>>& gpu_fields();
const std::vector<Field<NodeNic>>& nic_fields();
const std::vector<Field<NodeFactRow>>& fact_fields();

}  // namespace shakedown::tables
