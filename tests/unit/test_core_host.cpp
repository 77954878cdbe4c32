// cpu_share: how many CPUs a rank may use for untimed host work, from its affinity mask.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include "core/host.hpp"

namespace shakedown {
namespace {

int mask_size() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  EXPECT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  return CPU_COUNT(&mask);
}

// Restores the test process's affinity mask when it goes out of scope.
class SavedAffinity {
 public:
  SavedAffinity() { sched_getaffinity(0, sizeof saved_, &saved_); }
  ~SavedAffinity() { sched_setaffinity(0, sizeof saved_, &saved_); }
  SavedAffinity(const SavedAffinity&) = delete;
  SavedAffinity& operator=(const SavedAffinity&) = delete;
  const cpu_set_t& mask() const { return saved_; }

 private:
  cpu_set_t saved_{};
};

TEST(CoreHost, CpuShareSplitsAnUnboundMaskAmongTheHostsRanks) {
  const int mine = mask_size();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  ASSERT_GE(mine, 1);
  EXPECT_EQ(cpu_share(1), mine);
  EXPECT_EQ(cpu_share(0), mine) << "no rank count is one rank";
  // More ranks than CPUs: everyone still gets one thread.
  EXPECT_EQ(cpu_share(static_cast<int>(online) * 4 + 1), 1);
  if (mine == online && online >= 2) {
    // Every rank sees every CPU (unbound): each gets its even share.
    EXPECT_EQ(cpu_share(2), mine / 2);
  }
}

TEST(CoreHost, CpuShareKeepsABoundRanksWholeMask) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 2)
    GTEST_SKIP() << "needs 2 online CPUs to bind to a subset, this host has " << online;
  SavedAffinity saved;
  // Bind to two CPUs of the set (one where the host has only two): the host's ranks' masks can
  // be disjoint, so a rank keeps its whole mask; with more ranks than that it gets its share.
  const int want = online >= 4 ? 2 : 1;
  cpu_set_t part;
  CPU_ZERO(&part);
  int bound = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && bound < want; ++cpu) {
    if (CPU_ISSET(cpu, &saved.mask())) {
      CPU_SET(cpu, &part);
      ++bound;
    }
  }
  if (bound < want) GTEST_SKIP() << "the test's own mask has fewer than " << want << " CPUs";
  ASSERT_EQ(sched_setaffinity(0, sizeof part, &part), 0);
  EXPECT_EQ(cpu_share(1), want);
  EXPECT_EQ(cpu_share(static_cast<int>(online) / want), want) << "masks can be disjoint";
  EXPECT_EQ(cpu_share(static_cast<int>(online) + 1), 1) << "more ranks than CPUs";
}

}  // namespace
}  // namespace shakedown
