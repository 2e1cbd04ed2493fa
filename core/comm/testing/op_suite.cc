#include "core/comm/testing/op_suite.h"

#include <algorithm>
#include <sstream>

namespace ddp::comm::testing {
namespace {

// Rank r's i-th input element for a given salt: small integers of both signs.
template <typename T>
T Input(int rank, std::size_t i, int salt) {
  const long v = static_cast<long>((rank + 1) * 7 + static_cast<long>(i) * 3 + salt * 5) % 23 - 11;
  return static_cast<T>(v);
}

template <typename T>
std::vector<T> Inputs(int rank, std::size_t n, int salt) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = Input<T>(rank, i, salt);
  return v;
}

class Checker {
 public:
  template <typename T>
  void Equal(const std::string& what, const std::vector<T>& got, const std::vector<T>& want) {
    if (got == want) return;
    std::ostringstream out;
    out << what << ": got " << got.size() << " elements, want " << want.size();
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      if (got[i] != want[i]) {
        out << "; first difference at " << i << ": got " << got[i] << ", want " << want[i];
        break;
      }
    }
    failures.push_back(out.str());
  }
  std::vector<std::string> failures;
};

template <typename T>
void RunTyped(Comm& comm, Checker& check, const std::string& type) {
  const int w = comm.world_size();
  const int me = comm.rank();
  int salt = 0;
  // allgather, including zero-length contributions.
  for (std::size_t n : {std::size_t{5}, std::size_t{0}, std::size_t{1000}}) {
    ++salt;
    const auto mine = Inputs<T>(me, n, salt);
    std::vector<T> want;
    for (int r = 0; r < w; ++r) {
      const auto part = Inputs<T>(r, n, salt);
      want.insert(want.end(), part.begin(), part.end());
    }
    check.Equal(type + " allgather n=" + std::to_string(n),
                comm.Allgather(std::span<const T>(mine)), want);
  }
  // allgatherv: uneven counts with zeros, all zeros, one big, and blocks of
  // several pieces of unequal sizes (the Gloo backend cuts blocks over
  // 512 KiB into pieces; 300001 int64/double are 4.6 pieces, odd sizes).
  const std::vector<std::vector<std::size_t>> patterns = [&] {
    std::vector<std::size_t> uneven(w), zeros(w, 0), one_big(w, 0), pieces(w);
    for (int r = 0; r < w; ++r) {
      uneven[r] = static_cast<std::size_t>((r * 5 + 3) % 7);
      pieces[r] = r == 0 ? 300001 : static_cast<std::size_t>((r * 40009) % 90007);
    }
    if (w > 1) uneven[1] = 0;
    one_big[w - 1] = 4097;
    return std::vector<std::vector<std::size_t>>{uneven, zeros, one_big, pieces};
  }();
  for (const auto& counts : patterns) {
    ++salt;
    const auto mine = Inputs<T>(me, counts[me], salt);
    std::vector<T> want;
    for (int r = 0; r < w; ++r) {
      const auto part = Inputs<T>(r, counts[r], salt);
      want.insert(want.end(), part.begin(), part.end());
    }
    std::ostringstream name;
    name << type << " allgatherv counts=[";
    for (std::size_t c : counts) name << c << ",";
    name << "]";
    check.Equal(name.str(), comm.Allgatherv(std::span<const T>(mine), counts), want);
  }
  // allreduce: sum, max, min; small, empty, and large enough for several segments.
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
    for (std::size_t n : {std::size_t{7}, std::size_t{0}, std::size_t{40000}}) {
      ++salt;
      auto data = Inputs<T>(me, n, salt);
      std::vector<T> want = Inputs<T>(0, n, salt);
      for (int r = 1; r < w; ++r) {
        const auto x = Inputs<T>(r, n, salt);
        for (std::size_t i = 0; i < n; ++i) {
          if (op == ReduceOp::kSum) want[i] += x[i];
          if (op == ReduceOp::kMax) want[i] = std::max(want[i], x[i]);
          if (op == ReduceOp::kMin) want[i] = std::min(want[i], x[i]);
        }
      }
      comm.Allreduce(std::span<T>(data), op);
      check.Equal(type + " allreduce " + Name(op) + " n=" + std::to_string(n), data, want);
    }
  }
  // broadcast from every root.
  for (int root = 0; root < w; ++root) {
    ++salt;
    auto data = Inputs<T>(me, 9, salt);
    comm.Broadcast(std::span<T>(data), root);
    check.Equal(type + " broadcast root=" + std::to_string(root), data, Inputs<T>(root, 9, salt));
  }
  // reduce_scatter (sum), including empty blocks.
  for (std::size_t n : {std::size_t{3}, std::size_t{0}, std::size_t{2000}}) {
    ++salt;
    const auto input = Inputs<T>(me, n * static_cast<std::size_t>(w), salt);
    std::vector<T> want(n, T(0));
    for (int r = 0; r < w; ++r) {
      const auto x = Inputs<T>(r, n * static_cast<std::size_t>(w), salt);
      for (std::size_t i = 0; i < n; ++i) want[i] += x[static_cast<std::size_t>(me) * n + i];
    }
    check.Equal(type + " reduce_scatter n=" + std::to_string(n),
                comm.ReduceScatter(std::span<const T>(input)), want);
  }
  comm.Barrier();
}

}  // namespace

std::vector<std::string> RunOpSuite(Comm& comm) {
  Checker check;
  RunTyped<float>(comm, check, "float32");
  RunTyped<double>(comm, check, "float64");
  RunTyped<int32_t>(comm, check, "int32");
  RunTyped<int64_t>(comm, check, "int64");
  return check.failures;
}

}  // namespace ddp::comm::testing
