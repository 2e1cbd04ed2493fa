// --json PATH changes PATH's contents and nothing else: symlinks stay links,
// device nodes and FIFOs stay what they are (written through), a folder that
// cannot be written is found before the run, and a writer SIGKILLed at any
// moment leaves the old or the new file — never half of one, and no
// temporary file after the next check.
#include "core/results/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"

namespace ddp::results {
namespace {

std::string TmpDir(const std::string& name) {
  const std::string d = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  ::mkdir(d.c_str(), 0755);
  return d;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t Type(const std::string& path) {
  struct stat st {};
  ::lstat(path.c_str(), &st);
  return st.st_mode & S_IFMT;
}

std::vector<std::string> Temporaries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  while (const dirent* e = ::readdir(d)) {
    if (std::string(e->d_name).find(".tmp.") != std::string::npos) out.push_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

TEST(OutputFile, ARegularFileIsReplacedAndASymlinkFollowed) {
  const std::string dir = TmpDir("regular");
  EXPECT_EQ(WriteOutputFile(dir + "/a.json", "one\n"), "");
  EXPECT_EQ(WriteOutputFile(dir + "/a.json", "two\n"), "");
  EXPECT_EQ(Read(dir + "/a.json"), "two\n");
  // A link to a file: the file changes, the link stays a link.
  ASSERT_EQ(::symlink("a.json", (dir + "/link.json").c_str()), 0);
  EXPECT_EQ(WriteOutputFile(dir + "/link.json", "three\n"), "");
  EXPECT_EQ(Type(dir + "/link.json"), S_IFLNK);
  EXPECT_EQ(Read(dir + "/a.json"), "three\n");
  // A dangling link: its target is created.
  ASSERT_EQ(::symlink("new.json", (dir + "/dangling.json").c_str()), 0);
  EXPECT_EQ(CheckOutputFile(dir + "/dangling.json"), "");
  EXPECT_EQ(WriteOutputFile(dir + "/dangling.json", "four\n"), "");
  EXPECT_EQ(Type(dir + "/dangling.json"), S_IFLNK);
  EXPECT_EQ(Read(dir + "/new.json"), "four\n");
  EXPECT_TRUE(Temporaries(dir).empty());
}

TEST(OutputFile, AFifoIsWrittenThroughNeverReplaced) {
  const std::string dir = TmpDir("fifo");
  const std::string fifo = dir + "/out.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Nobody reading: an error, at once, and the FIFO is still a FIFO.
  EXPECT_NE(WriteOutputFile(fifo, "x\n").find("nothing is reading it"), std::string::npos);
  EXPECT_EQ(Type(fifo), S_IFIFO);
  std::string got;
  std::thread reader([&] { got = Read(fifo); });
  std::string err;
  for (int i = 0; i < 200; ++i) {  // until the reader has opened it
    err = WriteOutputFile(fifo, "through\n");
    if (err.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reader.join();
  EXPECT_EQ(err, "");
  EXPECT_EQ(got, "through\n");
  EXPECT_EQ(Type(fifo), S_IFIFO);
}

TEST(OutputFile, APipeBehindProcSelfFdIsWrittenThrough) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string path = "/proc/self/fd/" + std::to_string(fds[1]);
  EXPECT_EQ(CheckOutputFile(path), "");
  EXPECT_EQ(WriteOutputFile(path, "piped\n"), "");
  char buf[16] = {0};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), 6);
  EXPECT_EQ(std::string(buf), "piped\n");
  ::close(fds[0]);
  ::close(fds[1]);
}

// Issue 59 (3): `--json /dev/stdout >> app.log` left only the JSON in
// app.log: /dev/stdout led (through /proc/self/fd/1) to the regular file,
// which was then replaced. A descriptor is a stream: written through, at
// its place, never replaced. In a child, whose stdout is the log.
TEST(OutputFile, AFileBehindDevStdoutIsAppendedToNeverReplaced) {
  const std::string dir = TmpDir("stdout_file");
  for (const bool append : {true, false}) {
    const std::string log = dir + (append ? "/app.log" : "/trunc.log");
    {
      std::ofstream(log) << "PRECIOUS\n";
    }
    struct stat before {};
    ASSERT_EQ(::stat(log.c_str(), &before), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      // `>> app.log`, or `> trunc.log` after the program printed PRECIOUS.
      const int fd = append ? ::open(log.c_str(), O_WRONLY | O_APPEND)
                            : ::open(log.c_str(), O_WRONLY);
      if (!append) ::lseek(fd, 0, SEEK_END);
      ::dup2(fd, 1);
      std::printf("table\n");  // buffered by stdio: goes out first
      std::string err = CheckOutputFile("/dev/stdout");
      if (err.empty()) err = WriteOutputFile("/dev/stdout", "{\"json\": 1}\n");
      if (err.empty()) err = WriteOutputFile("/dev/fd/1", "[2]\n");
      std::printf("after\n");
      std::fflush(stdout);
      ::_exit(err.empty() ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(Read(log), "PRECIOUS\ntable\n{\"json\": 1}\n[2]\nafter\n") << log;
    struct stat after {};
    ASSERT_EQ(::stat(log.c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino) << log << " was replaced";
  }
  EXPECT_TRUE(Temporaries(dir).empty());
  // A descriptor that is not open is named, not created.
  EXPECT_NE(CheckOutputFile("/dev/fd/987").find("descriptor 987 is not open"), std::string::npos)
      << CheckOutputFile("/dev/fd/987");
  EXPECT_NE(WriteOutputFile("/dev/fd/987", "x").find("descriptor 987 is not open"),
            std::string::npos);
}

TEST(OutputFile, DeviceNodesAreNeverReplaced) {
  // Nodes made here (as root), never the machine's own /dev/full.
  const std::string dir = TmpDir("devices");
  const std::string null = dir + "/null", full = dir + "/full";
  if (::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    GTEST_SKIP() << "skipped: cannot create device nodes here (not root): " << std::strerror(errno);
  }
  EXPECT_EQ(CheckOutputFile(null), "");
  EXPECT_EQ(WriteOutputFile(null, "gone\n"), "");
  EXPECT_EQ(Type(null), S_IFCHR);
  const std::string err = WriteOutputFile(full, "no room\n");
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  EXPECT_EQ(Type(full), S_IFCHR);
  // Through a symlink too.
  ASSERT_EQ(::symlink("full", (dir + "/to_full").c_str()), 0);
  EXPECT_NE(WriteOutputFile(dir + "/to_full", "x"), "");
  EXPECT_EQ(Type(full), S_IFCHR);
  EXPECT_TRUE(Temporaries(dir).empty());
}

TEST(OutputFile, WhatCannotBeWrittenIsFoundBeforeTheRun) {
  const std::string dir = TmpDir("check");
  EXPECT_NE(CheckOutputFile(dir + "/missing/x.json").find("folder " + dir + "/missing"),
            std::string::npos);
  EXPECT_NE(CheckOutputFile(dir).find("is a directory"), std::string::npos);
  EXPECT_NE(WriteOutputFile(dir, "x").find("is a directory"), std::string::npos);
  EXPECT_EQ(CheckOutputFile(dir + "/fine.json"), "");
  EXPECT_FALSE(std::ifstream(dir + "/fine.json").good()) << "the check must create nothing";
  EXPECT_TRUE(Temporaries(dir).empty());
}

TEST(OutputFile, StaleTemporariesOfDeadWritersAreRemoved) {
  const std::string dir = TmpDir("stale");
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  std::ofstream(dir + "/.r.json.tmp." + std::to_string(dead)) << "half";
  std::ofstream(dir + "/.r.json.tmp." + std::to_string(::getppid())) << "a live writer's";
  std::ofstream(dir + "/.other.json.tmp." + std::to_string(dead)) << "another file's";
  EXPECT_EQ(CheckOutputFile(dir + "/r.json"), "");
  const auto left = Temporaries(dir);
  EXPECT_EQ(left.size(), 2u);
  for (const auto& name : left) EXPECT_NE(name, ".r.json.tmp." + std::to_string(dead));
}

TEST(OutputFile, AWriterKilledAtAnyMomentLeavesAWholeFile) {
  const std::string dir = TmpDir("kills");
  const std::string path = dir + "/records.json";
  // Versions large enough that a write takes a while; each is recognisable.
  auto version = [](int k) { return std::string(1 << 20, static_cast<char>('a' + k % 26)) + "\n"; };
  ASSERT_EQ(WriteOutputFile(path, version(0)), "");
  std::mt19937 rng(7);
  for (int kill = 0; kill < 30; ++kill) {
    const pid_t writer = ::fork();
    if (writer == 0) {
      for (int k = 1;; ++k) WriteOutputFile(path, version(k));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    ::kill(writer, SIGKILL);
    ::waitpid(writer, nullptr, 0);
    const std::string got = Read(path);
    ASSERT_EQ(got.size(), (1u << 20) + 1) << "a half-written file after kill " << kill;
    EXPECT_EQ(got.find_first_not_of(got[0]), got.size() - 1) << "mixed versions";
  }
  // Whatever the kills left is gone after the next check (which every run
  // makes before it starts).
  EXPECT_EQ(CheckOutputFile(path), "");
  EXPECT_TRUE(Temporaries(dir).empty()) << Temporaries(dir)[0];
}

}  // namespace
}  // namespace ddp::results
