#include "bench/common/report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "core/results/provenance.h"

namespace ddp::bench {

std::vector<double> LoadAverages() {
  std::vector<double> out(3);
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return {};
  const int got = std::fscanf(f, "%lf %lf %lf", &out[0], &out[1], &out[2]);
  std::fclose(f);
  return got == 3 ? out : std::vector<double>{};
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void AddRunContext(int world_size) {
  const results::Provenance provenance = results::CollectProvenance();
  benchmark::AddCustomContext("ddp_commit", provenance.commit);
  benchmark::AddCustomContext("ddp_cpu", provenance.cpu);
  benchmark::AddCustomContext("ddp_gloo", provenance.gloo);
  benchmark::AddCustomContext("ddp_gpu", provenance.gpu);
  benchmark::AddCustomContext("ddp_cuda", provenance.cuda);
  benchmark::AddCustomContext("ddp_nccl", provenance.nccl);
  benchmark::AddCustomContext("ddp_tcp_congestion", provenance.tcp_congestion);
  const unsigned cpus = std::thread::hardware_concurrency();
  benchmark::AddCustomContext("ddp_cpus", std::to_string(cpus));
  benchmark::AddCustomContext(
      "ddp_oversubscribed",
      static_cast<unsigned>(world_size) > cpus
          ? "yes: " + std::to_string(world_size) + " ranks on " + std::to_string(cpus) + " CPUs"
          : "no");
  if (const std::vector<double> load = LoadAverages(); !load.empty()) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.2f %.2f %.2f", load[0], load[1], load[2]);
    benchmark::AddCustomContext("ddp_loadavg_start", text);
  }
}

}  // namespace ddp::bench
