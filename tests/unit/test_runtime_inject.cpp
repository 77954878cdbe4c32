// --inject parsing and validation.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "runtime/inject.hpp"

using namespace shakedown;

TEST(Inject, ParsesStall) {
  FaultSpec f = parse_fault("stall:rank=1,phase=inventory,seconds=2.5");
  EXPECT_EQ(f.kind, "stall");
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.phase, "inventory");
  EXPECT_DOUBLE_EQ(f.seconds, 2.5);
  FaultPlan plan({f});
  EXPECT_TRUE(plan.find("stall", 1, "inventory"));
  EXPECT_FALSE(plan.find("stall", 0, "inventory"));
  EXPECT_FALSE(plan.find("stall", 1, "gemm"));
}

TEST(Inject, ParsesSdcWithOptionalStep) {
  const FaultSpec all = parse_fault("sdc:rank=2,phase=gemm");
  EXPECT_EQ(all.kind, "sdc");
  EXPECT_EQ(all.rank, 2);
  EXPECT_EQ(all.step, 0);
  EXPECT_EQ(parse_fault("sdc:rank=0,phase=gemm,step=3").step, 3);
}

TEST(Inject, ParsesSlowWithFactor) {
  const FaultSpec g = parse_fault("slow:rank=2,phase=gemm,factor=1.3");
  EXPECT_EQ(g.kind, "slow");
  EXPECT_EQ(g.phase, "gemm");
  EXPECT_DOUBLE_EQ(g.factor, 1.3);
  EXPECT_DOUBLE_EQ(parse_fault("slow:rank=0,phase=collectives").factor, 2.0);
}

TEST(Inject, ParsesLinkscanNodesAndLinks) {
  const FaultSpec node = parse_fault("slow:node=3,phase=linkscan,factor=8");
  EXPECT_EQ(node.node, 3);
  EXPECT_EQ(node.peer_node, -1);
  EXPECT_EQ(node.rank, -1);
  EXPECT_DOUBLE_EQ(node.factor, 8);
  const FaultSpec link = parse_fault("slow:link=5-2,phase=linkscan");
  EXPECT_EQ(link.node, 2);
  EXPECT_EQ(link.peer_node, 5);
  EXPECT_EQ(link.rank, -1);
  EXPECT_THROW(validate_faults({link}, 4, 4, {"linkscan"}), UsageError);  // node 5 of 0..3
  EXPECT_NO_THROW(validate_faults({link}, 6, 6, {"linkscan"}));
}

TEST(Inject, DefaultStallOutlastsAnyTimeout) {
  EXPECT_GE(parse_fault("stall:rank=0,phase=gemm").seconds, 3600);
}

TEST(Inject, RejectsBadSpecsWithReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"explode:rank=1,phase=inventory", "unknown fault kind 'explode'"},
      {"stall", "missing rank= and phase="},
      {"stall:rank=1", "missing phase=P"},
      {"stall:phase=inventory", "missing rank=R"},
      {"stall:rank=-1,phase=inventory", "rank must be"},
      {"stall:rank=x,phase=inventory", "rank must be"},
      {"stall:rank=1,phase=inventroy", "unknown phase 'inventroy'"},
      {"stall:rank=1,phase=inventory,seconds=-3", "seconds must be"},
      {"stall:rank=1,phase=inventory,color=red", "unknown key 'color'"},
      {"stall:rank=1,phase", "'phase' is not key=value"},
      {"corrupt:rank=1,phase=inventory", "planted only in phase collectives"},
      {"sdc:rank=1,phase=collectives", "planted only in phase gemm or train"},
      {"slow:rank=1,phase=inventory", "planted only in phase devices or linkscan or collectives"},
      {"slow:rank=1,phase=linkscan", "not a rank"},
      {"slow:node=1,phase=gemm", "add phase=linkscan"},
      {"slow:link=1-1,phase=linkscan", "two different node numbers"},
      {"slow:link=1,phase=linkscan", "two different node numbers"},
      {"slow:node=1,link=0-2,phase=linkscan", "give node= or link=, once"},
      {"slow:phase=linkscan", "missing one"},
      {"slow:rank=1,phase=gemm,factor=1", "factor must be a number > 1"},
      {"slow:rank=1,phase=gemm,factor=x", "factor must be a number > 1"},
      {"stall:rank=1,phase=gemm,factor=2", "unknown key 'factor'"},
      {"sdc:rank=1,phase=gemm,seconds=3", "unknown key 'seconds'"},
      {"fail:rank=1,phase=gemm,step=2", "unknown key 'step'"},
      {"stall:rank=0,rank=1,phase=gemm", "'rank' is given twice"},
      {"stall:rank=1,phase=gemm,phase=train", "'phase' is given twice"},
      {"slow:node=1,node=2,phase=linkscan", "'node' is given twice"},
  };
  for (const auto& [spec, expect] : cases) {
    try {
      parse_fault(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos)
          << spec << " -> " << e.what();
    }
  }
}

TEST(Inject, ValidatesAgainstTheRun) {
  std::vector<FaultSpec> f = {parse_fault("stall:rank=4,phase=inventory")};
  EXPECT_THROW(validate_faults(f, 4, 1, {"inventory"}), UsageError);
  EXPECT_NO_THROW(validate_faults(f, 5, 1, {"inventory"}));
  std::vector<FaultSpec> g = {parse_fault("stall:rank=0,phase=gemm")};
  EXPECT_THROW(validate_faults(g, 4, 1, {"inventory"}), UsageError);
  // A drift fault is planted on a node: node numbers are checked, ranks are not.
  std::vector<FaultSpec> d = {parse_fault("drift:node=1,field=kernel")};
  EXPECT_THROW(validate_faults(d, 4, 1, {"inventory"}), UsageError);
  EXPECT_NO_THROW(validate_faults(d, 4, 2, {"inventory"}));
}

TEST(Inject, DriftNamesANodeAndAField) {
  const FaultSpec f = parse_fault("drift:node=2,field=gpu.driver,value=570.124.06");
  EXPECT_EQ(f.node, 2);
  EXPECT_EQ(f.rank, -1);
  EXPECT_EQ(f.phase, "inventory");
  EXPECT_EQ(f.field, "gpu.driver");
  EXPECT_EQ(f.value, "570.124.06");
  const FaultPlan plan({f});
  EXPECT_EQ(plan.for_node("drift", 2).size(), 1u);
  EXPECT_TRUE(plan.for_node("drift", 1).empty());
  for (const auto& [spec, expect] : std::vector<std::pair<std::string, std::string>>{
           {"drift:field=kernel", "missing node=N"},
           {"drift:node=1", "missing field=F"},
           {"drift:node=1,field=ker nel", "field must be an inventory field"},
           {"drift:rank=1,field=kernel", "planted on a node (node=N), not a rank"},
           {"drift:node=1,field=kernel,phase=gemm", "only in phase inventory"}}) {
    try {
      parse_fault(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos)
          << spec << " -> " << e.what();
    }
  }
}
