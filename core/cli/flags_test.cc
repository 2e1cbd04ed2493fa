#include "core/cli/flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ddp::cli {
namespace {

Flags::Result ParseArgs(Flags& f, std::vector<std::string> args) {
  std::vector<char*> argv;
  static std::string prog = "prog";
  argv.push_back(prog.data());
  for (auto& a : args) argv.push_back(a.data());
  return f.Parse(static_cast<int>(argv.size()), argv.data());
}

struct Fixture {
  Flags flags{"prog", "test"};
  int w = 4;
  double t = 60;
  bool drop = false;
  std::string backend = "gloo";
  std::vector<int> worlds = {2, 4};
  Fixture() {
    flags.Int("world_size", &w, "ranks", 1, 64);
    flags.Double("timeout", &t, "seconds", 0.001, 86400);
    flags.Bool("drop_last", &drop, "drop");
    flags.Choice("backend", &backend, "engine", {"gloo", "nccl"});
    flags.IntList("worlds", &worlds, "sweep", 1, 8);
  }
};

TEST(FlagsTest, ParsesBothSpellings) {
  Fixture fx;
  ASSERT_EQ(ParseArgs(fx.flags, {"--world_size", "8", "--timeout=2.5", "--drop_last", "--backend=nccl",
                           "--worlds", "1,3"}),
            Flags::Result::kOk);
  EXPECT_EQ(fx.w, 8);
  EXPECT_EQ(fx.t, 2.5);
  EXPECT_TRUE(fx.drop);
  EXPECT_EQ(fx.backend, "nccl");
  EXPECT_EQ(fx.worlds, (std::vector<int>{1, 3}));
  EXPECT_TRUE(fx.flags.WasSet("world_size"));
  Fixture fy;
  ASSERT_EQ(ParseArgs(fy.flags, {"--drop_last=false"}), Flags::Result::kOk);
  EXPECT_FALSE(fy.drop);
  EXPECT_FALSE(fy.flags.WasSet("world_size"));
}

TEST(FlagsTest, BadValuesNameTheFlagAndAllowedValues) {
  Fixture a;
  EXPECT_EQ(ParseArgs(a.flags, {"--world_size", "0"}), Flags::Result::kError);
  EXPECT_EQ(a.flags.Error(),
            "prog: bad value '0' for --world_size (allowed: an integer in 1..64)");
  Fixture b;
  EXPECT_EQ(ParseArgs(b.flags, {"--backend=mpi"}), Flags::Result::kError);
  EXPECT_EQ(b.flags.Error(), "prog: bad value 'mpi' for --backend (allowed: one of gloo|nccl)");
  Fixture c;
  EXPECT_EQ(ParseArgs(c.flags, {"--world_size=4x"}), Flags::Result::kError);
  Fixture d;
  EXPECT_EQ(ParseArgs(d.flags, {"--nope"}), Flags::Result::kError);
  EXPECT_EQ(d.flags.Error(), "prog: unknown flag --nope (see --help)");
  Fixture e;
  EXPECT_EQ(ParseArgs(e.flags, {"--timeout"}), Flags::Result::kError);
  Fixture f;
  EXPECT_EQ(ParseArgs(f.flags, {"stray"}), Flags::Result::kError);
  Fixture g;
  EXPECT_EQ(ParseArgs(g.flags, {"--worlds=2,,4"}), Flags::Result::kError);
  Fixture h;
  EXPECT_EQ(ParseArgs(h.flags, {"--drop_last=maybe"}), Flags::Result::kError);
}

TEST(FlagsTest, HelpListsEveryFlag) {
  Fixture fx;
  EXPECT_EQ(ParseArgs(fx.flags, {"--help"}), Flags::Result::kHelp);
  const std::string u = fx.flags.Usage();
  for (const char* name : {"--world_size", "--timeout", "--drop_last", "--backend", "--worlds"}) {
    EXPECT_NE(u.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace ddp::cli
