#include "record/run_meta.hpp"

#include <chrono>
#include <ctime>

namespace shakedown {

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32] = {};
  const std::size_t n = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text, n);
}

bool is_run_status(const std::string& status) {
  return status == schema::kStatusRunning || status == schema::kStatusComplete ||
         status == schema::kStatusAborted;
}

}  // namespace shakedown
