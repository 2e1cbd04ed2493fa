#include <cstdio>
#include <cstdlib>
#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"
using namespace ddp;
int main(int argc, char** argv) {
  int which = std::atoi(argv[1]);
  auto r = launch::SpawnRanks(2, [which](const launch::RankEnv& env) {
    auto o = comm::OptionsFromRankEnv(env); o.timeout = std::chrono::seconds(3);
    auto c = comm::MakeComm(o);
    std::vector<float> e;
    std::vector<size_t> zc = {0, 0};
    if (which == 0) c->Allgather(std::span<const float>(e));
    if (which == 1) c->Allgatherv(std::span<const float>(e), zc);
    if (which == 2) c->Allreduce(std::span<float>(e));
    if (which == 3) c->ReduceScatter(std::span<const float>(e));
    if (which == 4) c->Broadcast(std::span<float>(e), 0);
    return 0;
  });
  std::printf("%d: %s", which, r.Summary().c_str());
}
