// Gloo links and two forked processes allreduce over TCP on loopback,
// rendezvousing through a FileStore under $TEST_TMPDIR.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gloo/allreduce.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#include "gtest/gtest.h"

namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// Runs in the child: returns the process exit code (0 when the sum is right).
int RunRank(int rank, int world, const std::string& store_dir) {
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(store_dir);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, world);
    context->setTimeout(std::chrono::seconds(10));
    context->connectFullMesh(store, device);
    std::vector<double> data = {1.0 + rank, 10.0 * (rank + 1)};
    gloo::AllreduceOptions opts(context);
    opts.setOutput(data.data(), data.size());
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<double>));
    gloo::allreduce(opts);
    // ranks 0 and 1: 1 + 2 = 3, 10 + 20 = 30.
    return (data[0] == 3.0 && data[1] == 30.0) ? 0 : 3;
  } catch (const std::exception& e) {
    fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 4;
  }
}

TEST(GlooSmoke, TwoProcessAllreduce) {
  const std::string store_dir = TempDir() + "/gloo_smoke_store";
  std::filesystem::remove_all(store_dir);
  std::filesystem::create_directories(store_dir);
  constexpr int kWorld = 2;
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kWorld; ++rank) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(RunRank(rank, kWorld, store_dir));
    pids.push_back(pid);
  }
  for (int rank = 0; rank < kWorld; ++rank) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[rank], &status, 0), pids[rank]);
    ASSERT_TRUE(WIFEXITED(status)) << "rank " << rank << " did not exit normally";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << rank;
  }
}

}  // namespace
