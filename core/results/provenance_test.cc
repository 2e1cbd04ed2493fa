#include "core/results/provenance.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace ddp::results {
namespace {

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

// "+dirty" must mean that the code differs from the commit: the records a
// regeneration has already rewritten under results/ do not count, nor do
// untracked files.
TEST(Provenance, DirtyMeansCodeNotResults) {
  if (std::system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no git here";
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir = std::filesystem::path(tmp ? tmp : "/tmp") / "prov_repo";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "results");
  Write(dir / "code.cc", "int x;\n");
  Write(dir / "results" / "r.json", "[]\n");
  const std::string git = "git -C '" + dir.string() + "' ";
  ASSERT_EQ(std::system((git + "init -q && " + git + "add -A && " + git +
                         "-c user.name=t -c user.email=t@t commit -q -m init")
                            .c_str()),
            0);
  const std::string head = GitCommitOf(dir.string());
  ASSERT_EQ(head.size(), 40u) << head;
  Write(dir / "results" / "r.json", "[1]\n");
  Write(dir / "untracked.txt", "x\n");
  EXPECT_EQ(GitCommitOf(dir.string()), head);
  Write(dir / "code.cc", "int y;\n");
  EXPECT_EQ(GitCommitOf(dir.string()), head + "+dirty");
  EXPECT_EQ(GitCommitOf((dir / "no-such-dir").string()), "unknown");
}

// A GPU runner's bundle has no git: run_all.sh exports the bundle's commit,
// and every record carries it rather than "unknown".
TEST(Provenance, CommitFromTheEnvironmentWinsOutsideAGitTree) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir = std::filesystem::path(tmp ? tmp : "/tmp") / "no_git_here";
  std::filesystem::create_directories(dir);
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  ::unsetenv("BUILD_WORKSPACE_DIRECTORY");
  ::setenv("DDP_PITFALLS_COMMIT", "0123456789abcdef0123456789abcdef01234567+dirty", 1);
  const Provenance p = CollectProvenance();
  ::unsetenv("DDP_PITFALLS_COMMIT");
  std::filesystem::current_path(cwd);
  EXPECT_EQ(p.commit, "0123456789abcdef0123456789abcdef01234567+dirty");
  EXPECT_EQ(ToJson(p).at("commit").get<std::string>(), p.commit);
}

}  // namespace
}  // namespace ddp::results
