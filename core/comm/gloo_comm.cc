#include "core/comm/gloo_comm.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "core/comm/gloo_allgatherv.h"
#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/common/logging.h"
#include "gloo/math.h"
#include "gloo/reduce_scatter.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"

namespace ddp::comm {
namespace {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <typename T>
ReduceFn ReduceFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return &gloo::sum<T>;
    case ReduceOp::kMax: return &gloo::max<T>;
    case ReduceOp::kMin: return &gloo::min<T>;
  }
  throw std::invalid_argument("unknown ReduceOp");
}

// Calls f.template operator()<T>() with T the C++ type of `dtype`.
template <typename F>
void Dispatch(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f.template operator()<float>();
    case DType::kFloat64: return f.template operator()<double>();
    case DType::kInt32: return f.template operator()<int32_t>();
    case DType::kInt64: return f.template operator()<int64_t>();
  }
  throw std::invalid_argument("unknown DType");
}

// Gloo reports a missed deadline as an IoException saying "Timed out"; a
// closed or reset connection (a dead peer) as other IoExceptions; broken
// invariants (e.g. mismatched sizes it notices) as EnforceNotMet.
[[noreturn]] void Rethrow() {
  try {
    throw;
  } catch (const gloo::IoException& e) {
    const bool timeout = std::strstr(e.what(), "Timed out") != nullptr;
    throw EngineFailure(timeout ? EngineFailure::Kind::kTimeout : EngineFailure::Kind::kPeer,
                        e.what());
  } catch (const gloo::EnforceNotMet& e) {
    throw EngineFailure(EngineFailure::Kind::kPeer, e.what());
  } catch (const gloo::Exception& e) {
    throw EngineFailure(EngineFailure::Kind::kPeer, e.what());
  }
}

class GlooComm final : public Comm {
 public:
  GlooComm(CommSetup setup, std::shared_ptr<gloo::Context> context, std::size_t piece_bytes)
      : Comm(std::move(setup)), context_(std::move(context)), piece_bytes_(piece_bytes) {}

 protected:
  void EngineAllgather(const void* send, void* recv, std::size_t count, DType dtype,
                       uint32_t tag) override {
    if (count == 0) {
      // Gloo 0.5's allgather divides by the per-rank size (SIGFPE on zero
      // elements); its allgatherv handles empty contributions. Still a real
      // engine call, so ranks still synchronise here.
      const std::vector<std::size_t> zeros(static_cast<std::size_t>(world_size()), 0);
      EngineAllgatherv(send, 0, recv, zeros, dtype, tag);
      return;
    }
    Dispatch(dtype, [&]<typename T>() {
      try {
        gloo::AllgatherOptions opts(context_);
        opts.setInput(const_cast<T*>(static_cast<const T*>(send)), count);
        opts.setOutput(static_cast<T*>(recv), count * static_cast<std::size_t>(world_size()));
        opts.setTag(tag);
        gloo::allgather(opts);
      } catch (...) {
        Rethrow();
      }
    });
  }

  void EngineAllgatherv(const void* send, std::size_t count, void* recv,
                        std::span<const std::size_t> counts, DType dtype,
                        uint32_t tag) override {
    // Not gloo::allgatherv: the same ring with its blocks in pieces, or a
    // direct exchange (gloo_allgatherv.h says why and what it measured).
    const std::size_t size = SizeOf(dtype);
    std::vector<std::size_t> bytes(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) bytes[r] = counts[r] * size;
    const std::size_t mine = counts[static_cast<std::size_t>(rank())];
    if (count != mine) {  // what gloo::allgatherv enforced, with the same outcome
      throw EngineFailure(EngineFailure::Kind::kPeer,
                          "allgatherv: this rank sends " + std::to_string(count) +
                              " elements but counts[" + std::to_string(rank()) + "] is " +
                              std::to_string(mine));
    }
    try {
      if (gloo_allgatherv() == GlooAllgathervAlgorithm::kDirect) {
        DirectAllgatherv(context_, send, recv, bytes, tag, piece_bytes_);
      } else {
        PipelinedAllgatherv(context_, send, recv, bytes, tag, piece_bytes_);
      }
    } catch (...) {
      Rethrow();
    }
  }

  void EngineAllreduce(void* data, std::size_t count, DType dtype, ReduceOp op,
                       uint32_t tag) override {
    Dispatch(dtype, [&]<typename T>() {
      try {
        gloo::AllreduceOptions opts(context_);
        opts.setOutput(static_cast<T*>(data), count);
        opts.setReduceFunction(ReduceFor<T>(op));
        opts.setTag(tag);
        gloo::allreduce(opts);
      } catch (...) {
        Rethrow();
      }
    });
  }

  void EngineBroadcast(void* data, std::size_t count, DType dtype, int root,
                       uint32_t tag) override {
    Dispatch(dtype, [&]<typename T>() {
      try {
        gloo::BroadcastOptions opts(context_);
        opts.setOutput(static_cast<T*>(data), count);
        opts.setRoot(root);
        opts.setTag(tag);
        gloo::broadcast(opts);
      } catch (...) {
        Rethrow();
      }
    });
  }

  void EngineReduceScatter(const void* send, void* recv, std::size_t recv_count, DType dtype,
                           uint32_t /*tag*/) override {
    // Gloo 0.5 has reduce-scatter only as the (older, pair-based)
    // halving-doubling algorithm: in place on a full-size buffer, with the
    // result for this rank at its start. Its slots come from the context's
    // own counter, which advances identically on every rank.
    const std::size_t total = recv_count * static_cast<std::size_t>(world_size());
    if (total > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw std::invalid_argument("ReduceScatter on gloo: more than INT_MAX elements");
    }
    Dispatch(dtype, [&]<typename T>() {
      try {
        std::vector<T> work(static_cast<const T*>(send), static_cast<const T*>(send) + total);
        std::vector<T*> ptrs = {work.data()};
        std::vector<int> recv_elems(static_cast<std::size_t>(world_size()),
                                    static_cast<int>(recv_count));
        gloo::ReduceScatterHalvingDoubling<T> algo(context_, ptrs, static_cast<int>(total),
                                                   recv_elems);
        algo.run();
        std::memcpy(recv, work.data(), recv_count * sizeof(T));
      } catch (...) {
        Rethrow();
      }
    });
  }

  void EngineBarrier(uint32_t tag) override {
    try {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      gloo::barrier(opts);
    } catch (...) {
      Rethrow();
    }
  }

  uint64_t AllgathervEngineVariant() const override {
    return GlooAllgathervVariant(gloo_allgatherv(), piece_bytes_);
  }

  std::vector<Fingerprint> EngineExchangeFingerprints(const Fingerprint& mine,
                                                      uint32_t tag) override {
    auto bytes = mine.Serialize();
    std::vector<char> all(Fingerprint::kBytes * static_cast<std::size_t>(world_size()));
    try {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(bytes.data(), bytes.size());
      opts.setOutput(all.data(), all.size());
      opts.setTag(tag);
      gloo::allgather(opts);
    } catch (...) {
      Rethrow();
    }
    std::vector<Fingerprint> out;
    for (int r = 0; r < world_size(); ++r) {
      out.push_back(Fingerprint::Deserialize(all.data() + r * Fingerprint::kBytes));
    }
    return out;
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  std::size_t piece_bytes_;  // of the allgatherv (options.h)
};

struct BindChoice {
  std::string host;
  std::string source;  // where it came from, for messages
};

BindChoice DefaultBindAddress(const CommOptions& options, const store::Store& store) {
  if (!options.bind_address.empty()) return {options.bind_address, "CommOptions.bind_address"};
  if (const char* v = std::getenv(kEnvGlooAddr); v != nullptr && *v != '\0') {
    return {v, kEnvGlooAddr};
  }
  // A file store means one host: loopback. Redis means several hosts: this
  // host's name, as PyTorch's gloo backend does.
  if (store.Describe().rfind("redis://", 0) != 0) return {"127.0.0.1", "the default with a file store"};
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) return {"127.0.0.1", "loopback"};
  return {host, std::string("this host's name, the default with a Redis rendezvous; set ") +
                    kEnvGlooAddr + " to an address of this host"};
}

// getaddrinfo, bounded: a lookup that waits on an unreachable DNS server
// must not outlast the deadline. The lookup thread is left to finish alone.
std::vector<sockaddr_storage> Resolve(const BindChoice& bind, std::chrono::milliseconds limit) {
  struct Lookup {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    std::vector<sockaddr_storage> addrs;
  };
  auto lookup = std::make_shared<Lookup>();
  std::thread([lookup, host = bind.host] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    std::vector<sockaddr_storage> addrs;
    for (addrinfo* ai = rc == 0 ? res : nullptr; ai != nullptr; ai = ai->ai_next) {
      sockaddr_storage ss{};
      std::memcpy(&ss, ai->ai_addr, std::min<std::size_t>(ai->ai_addrlen, sizeof ss));
      addrs.push_back(ss);
    }
    if (res != nullptr) ::freeaddrinfo(res);
    std::lock_guard<std::mutex> lock(lookup->mu);
    lookup->rc = rc;
    lookup->addrs = std::move(addrs);
    lookup->done = true;
    lookup->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(lookup->mu);
  const std::string what = "Gloo cannot bind to '" + bind.host + "' (" + bind.source + "): ";
  if (!lookup->cv.wait_for(lock, limit, [&] { return lookup->done; })) {
    throw launch::ConfigError(what + "the name did not resolve within " +
                              std::to_string(limit.count()) + " ms");
  }
  if (lookup->rc != 0 || lookup->addrs.empty()) {
    throw launch::ConfigError(what + "the name does not resolve (" +
                              (lookup->rc != 0 ? ::gai_strerror(lookup->rc) : "no address") + ")");
  }
  return lookup->addrs;
}

std::string Numeric(const sockaddr_storage& ss) {
  char text[NI_MAXHOST] = {0};
  const socklen_t len = ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  ::getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, text, sizeof text, nullptr, 0,
                NI_NUMERICHOST);
  return text;
}

// Resolves the bind address and checks that one of its addresses belongs to
// this host (a test bind to port 0), before Gloo sees it: Gloo 0.5
// dereferences a failed lookup (SIGSEGV in CreateDeviceAttr). Returns the
// numeric address Gloo then binds.
std::string CheckedBindAddress(const BindChoice& bind, std::chrono::milliseconds limit) {
  std::string tried;
  for (const sockaddr_storage& ss : Resolve(bind, limit)) {
    const std::string numeric = Numeric(ss);
    const socklen_t len = ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      throw launch::ConfigError("Gloo cannot bind to '" + bind.host + "': socket: " +
                                std::strerror(errno));
    }
    const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) == 0;
    const int err = errno;
    ::close(fd);
    if (ok) return numeric;
    tried += (tried.empty() ? "" : ", ") + numeric + " (" + std::strerror(err) + ")";
  }
  throw launch::ConfigError("Gloo cannot bind to '" + bind.host + "' (" + bind.source +
                            "): it resolves to " + tried +
                            ", not an address of this host; set " + kEnvGlooAddr +
                            " to one of this host's addresses");
}

}  // namespace

std::unique_ptr<Comm> MakeGlooComm(const CommOptions& options, CommSetup setup) {
  // Python ignores SIGPIPE at startup, so every PyTorch rank does. Without
  // the same here, a rank whose Gloo pair writes to a dead peer's socket dies
  // of SIGPIPE instead of seeing the write fail and raising a PeerError.
  std::signal(SIGPIPE, SIG_IGN);
  const GlooAllgathervAlgorithm allgatherv = ResolveGlooAllgatherv(options);
  const std::size_t piece_bytes = ResolveGlooAllgathervPieceBytes(options);
  gloo::transport::tcp::attr attr;
  const BindChoice bind = DefaultBindAddress(options, *setup.store);
  attr.hostname = CheckedBindAddress(bind, setup.startup_timeout);
  {
    char name[256] = {0};
    if (::gethostname(name, sizeof(name) - 1) != 0) std::strcpy(name, "unknown");
    setup.host = std::string(name) + " (" + attr.hostname + ")";
  }
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw launch::ConfigError("Gloo cannot bind to '" + bind.host + "' (" + bind.source +
                              "): " + e.what());
  }
  auto context = std::make_shared<gloo::rendezvous::Context>(setup.rank, setup.world_size);
  // The collectives' bound, and the pairs' (which keep the timeout they are
  // created with): the collective deadline. Gloo connects every pair here,
  // so its first collective is an ordinary one. The rendezvous waits up to
  // the start-up bound instead (the store view's floor).
  context->setTimeout(setup.timeout);
  try {
    // Our prefixed view, not Gloo's PrefixStore: its waits would ignore the
    // deadline (Gloo's default is 30 s).
    auto gloo_store = store::PrefixedStore(setup.store, "gloo", setup.startup_timeout);
    context->connectFullMesh(*gloo_store, device);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    // Which phase: waiting in the store for a peer's address (rendezvous)
    // or connecting to a peer that has published one (init).
    const bool rendezvous = dynamic_cast<const store::StoreError*>(&e) != nullptr;
    const std::string message =
        "gloo " + std::string(rendezvous ? "rendezvous" : "init (connecting to peers)") +
        " of rank " + std::to_string(setup.rank) + " of " + std::to_string(setup.world_size) +
        " through " + setup.store->Describe() + " failed (" +
        (rendezvous ? "start-up bound " + std::to_string(setup.startup_timeout.count())
                    : "deadline " + std::to_string(setup.timeout.count())) +
        " ms): " + what;
    // A peer that closed or reset its connection while this rank was still
    // connecting has died (e.g. Gloo aborted it in a collective with a rank
    // that had already connected): its failure, not this rank's. Said so, the
    // launcher blames that peer (failure_report.h) rather than this rank.
    FailureContext context;
    context.rank = setup.rank;
    context.world_size = setup.world_size;
    context.backend = "gloo";
    context.deadline = setup.timeout;
    context.engine_message = what;
    if (what.find("closed by peer") != std::string::npos ||
        what.find("reset by peer") != std::string::npos) {
      throw PeerError(message, std::move(context));
    }
    // A pair that never connected: a peer that never came (Gloo waits five
    // times the timeout for a first connection; a supervisor's deadline
    // usually ends the rank first).
    if (what.find("Connect timeout") != std::string::npos) {
      throw DeadlineError(message, std::move(context));
    }
    throw CommError(message);
  }
  auto comm = std::make_unique<GlooComm>(std::move(setup), std::move(context), piece_bytes);
  comm->set_gloo_allgatherv(allgatherv);
  return comm;
}

}  // namespace ddp::comm
