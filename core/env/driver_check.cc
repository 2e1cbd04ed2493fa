#include "core/env/driver_check.h"

#include <cctype>
#include <fstream>
#include <regex>

namespace ddp::env {
namespace {

// The leading whole number of "13.0" or "535.104.05"; -1 when none.
int Major(const std::string& version) {
  std::size_t end = 0;
  while (end < version.size() && std::isdigit(static_cast<unsigned char>(version[end]))) ++end;
  return end == 0 || end > 6 ? -1 : std::stoi(version.substr(0, end));
}

}  // namespace

int MinDriverBranch(int cuda_major) {
  switch (cuda_major) {
    case 11: return 450;
    case 12: return 525;
    case 13: return 580;
    default: return 0;
  }
}

std::string DriverProblem(const std::string& runtime, const std::string& driver_release,
                          const std::string& driver_cuda) {
  const int cuda = Major(runtime);
  const int need = MinDriverBranch(cuda);
  if (need == 0) return "";
  std::string has;
  if (const int branch = Major(driver_release); branch >= 0) {
    if (branch >= need) return "";
    has = driver_release;
  } else if (const int supports = Major(driver_cuda); supports >= 0) {
    if (supports >= cuda) return "";
    has = "a driver for CUDA " + driver_cuda;
  } else {
    return "";
  }
  return "this binary's CUDA " + runtime + " runtime needs driver >= " + std::to_string(need) +
         "; this machine has " + has + ": rebuild with CUDA_PATH pointing at a CUDA " +
         std::to_string(cuda - 1) + " toolkit";
}

std::string NvidiaDriverRelease(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat ..." or
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  ..."
  static const std::regex kVersion(R"((^|\s)([0-9]{2,4}\.[0-9]{1,3}(\.[0-9]{1,3})?)(\s|$))");
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("NVRM version:", 0) == 0 && std::regex_search(line, m, kVersion)) return m[2];
  }
  return "";
}

}  // namespace ddp::env
