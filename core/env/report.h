// The environment report: versions of everything the suite's numbers depend
// on, visible GPUs, and which collective backends can run on this machine.
#pragma once

#include <string>
#include <vector>

namespace ddp::env {

struct GpuInfo {
  std::string name;
  double memory_gib = 0;
  int sm_major = 0;
  int sm_minor = 0;
};

struct GpuProbe {
  bool built_with_cuda = false;
  std::string cuda_runtime;  // e.g. "13.0", empty when unknown
  std::string driver;        // CUDA version the driver supports, e.g. "13.0"
  std::string nccl_runtime;  // version of the libnccl loaded at run time
  std::string nccl_header;   // version the binary was compiled against
  std::vector<GpuInfo> gpus;
  std::string why_no_gpu;    // filled when gpus is empty
};

// Asks CUDA and NCCL (NCCL through dlopen, so a missing libnccl is reported,
// not fatal). Without CUDA at build time it says why.
GpuProbe ProbeGpus();

// "" when the driver can run the CUDA runtime built in (or there is no
// driver or no CUDA to judge), else one line saying what to do
// (driver_check.h).
std::string DriverProblemHere(const GpuProbe& probe);

// "model name" of /proc/cpuinfo, or "unknown".
std::string CpuModel();

// Gloo's version and the Debian package it came from.
std::string GlooVersion();

// The TCP congestion control new sockets get in this network namespace
// (/proc/sys/net/ipv4/tcp_congestion_control), or "unknown". Gloo's loopback
// timings depend on it: on one 2-core machine a 1 MiB exchange took about
// twice as long under bbr as under cubic (bench/padding/README.md).
std::string TcpCongestionControl();

// Key/value lines of the whole report, in print order.
std::vector<std::pair<std::string, std::string>> Report();

}  // namespace ddp::env
