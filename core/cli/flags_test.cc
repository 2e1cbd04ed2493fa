#include "core/cli/flags.h"

#include <string>
#include <vector>

#include "core/cli/number.h"
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

// Issue 59 (12): `--json ""` was accepted and wrote nothing (an empty
// path reads as "not given"). A path flag refuses it, naming the flag.
TEST(FlagsTest, AnEmptyPathIsAnErrorNamingTheFlag) {
  Flags flags{"prog", "test"};
  std::string json;
  flags.Path("json", &json, "records");
  EXPECT_EQ(ParseArgs(flags, {"--json", ""}), Flags::Result::kError);
  EXPECT_EQ(flags.Error(), "prog: bad value '' for --json (allowed: a path (not empty))");
  Flags again{"prog", "test"};
  again.Path("json", &json, "records");
  EXPECT_EQ(ParseArgs(again, {"--json=r.json"}), Flags::Result::kOk);
  EXPECT_EQ(json, "r.json");
}

// Issue 35: "--timeout 0x10" was read as 16, " 5" and "+5" as 5.
TEST(FlagsTest, NumbersAreStrictDecimal) {
  for (const char* bad : {"0x10", "0X1p3", "inf", "nan", " 5", "5 ", "+5", "1e", "1e999", ".", "-",
                          "1.2.3", ""}) {
    Fixture fx;
    EXPECT_EQ(ParseArgs(fx.flags, {"--timeout", bad}), Flags::Result::kError) << bad;
    EXPECT_EQ(fx.t, 60) << bad;
  }
  for (const char* bad : {"0x10", "+4", " 4", "4.0", "010x"}) {
    Fixture fx;
    EXPECT_EQ(ParseArgs(fx.flags, {"--world_size", bad}), Flags::Result::kError) << bad;
    Fixture fy;
    EXPECT_EQ(ParseArgs(fy.flags, {"--worlds", std::string("2,") + bad}), Flags::Result::kError)
        << bad;
  }
  Fixture ok;
  ASSERT_EQ(ParseArgs(ok.flags, {"--timeout", "1.5e1", "--world_size", "010"}),
            Flags::Result::kOk);
  EXPECT_EQ(ok.t, 15);
  EXPECT_EQ(ok.w, 10);
  double d = 0;
  EXPECT_TRUE(ParseDecimal(".5", &d));
  EXPECT_EQ(d, 0.5);
  EXPECT_TRUE(ParseDecimal("-2.", &d));
  EXPECT_EQ(d, -2);
  EXPECT_TRUE(ParseDecimal("3E-2", &d));
  EXPECT_EQ(d, 0.03);
  std::int64_t i = 0;
  EXPECT_TRUE(ParseDecimalInt64("-9223372036854775808", &i));
  EXPECT_FALSE(ParseDecimalInt64("9223372036854775808", &i));
}

// Issue 35: a repeated flag silently took the last value.
TEST(FlagsTest, ARepeatedFlagIsAnErrorNamingIt) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--world_size", "2", "--world_size", "8"},
        std::vector<std::string>{"--world_size=2", "--world_size=2"},
        std::vector<std::string>{"--drop_last", "--drop_last=false"}}) {
    Fixture fx;
    EXPECT_EQ(ParseArgs(fx.flags, args), Flags::Result::kError) << args[0];
    EXPECT_NE(fx.flags.Error().find("--" + args[0].substr(2, args[0].find('=') - 2) +
                                    " given more than once"),
              std::string::npos)
        << fx.flags.Error();
  }
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
