#include "core/trace/watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/trace/analyze.h"
#include "core/trace/dump_json.h"

namespace ddp::trace {
namespace {

// SIGUSR1: the handler only sets a flag and wakes the watchdog through a
// pipe (both async-signal-safe); the thread writes the dump.
std::atomic<bool> g_sigusr1{false};
std::atomic<int> g_wake_fd{-1};
struct sigaction g_old_sigusr1;

extern "C" void OnSigusr1(int) {
  const int saved = errno;
  g_sigusr1.store(true);
  const int fd = g_wake_fd.load();
  if (fd >= 0) {
    const char c = 1;
    [[maybe_unused]] const ssize_t n = ::write(fd, &c, 1);
  }
  errno = saved;
}

// The instance belongs to the process that made it: a forked child starts
// from nothing (the parent's thread does not exist there).
std::mutex g_instance_mu;
Watchdog* g_instance = nullptr;
void LockBeforeFork() { g_instance_mu.lock(); }
void UnlockInParent() { g_instance_mu.unlock(); }
void ResetInChild() {
  g_instance = nullptr;  // the parent's copy is abandoned, never used
  g_wake_fd.store(-1);
  g_sigusr1.store(false);
  g_instance_mu.unlock();
}

std::string HostName() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Watchdog& Watchdog::Get() {
  static std::once_flag once;
  std::call_once(once, [] { ::pthread_atfork(LockBeforeFork, UnlockInParent, ResetInChild); });
  std::lock_guard<std::mutex> lock(g_instance_mu);
  if (g_instance == nullptr) g_instance = new Watchdog();  // never destroyed: no thread outlives it
  return *g_instance;
}

int Watchdog::Register(Registration registration) {
  std::lock_guard<std::mutex> life(lifecycle_mu_);
  int id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto e = std::make_shared<Entry>();
    e->id = id = next_id_++;
    e->reg = std::move(registration);
    entries_.push_back(std::move(e));
  }
  if (!running_) Start();
  return id;
}

void Watchdog::Unregister(int id) {
  std::lock_guard<std::mutex> life(lifecycle_mu_);
  ClearAbortHook(id);
  bool empty = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(entries_, [id](const auto& e) { return e->id == id; });
    empty = entries_.empty();
  }
  if (empty && running_) Stop();
}

void Watchdog::SetAbortHook(int id, std::function<void()> hook) {
  auto e = Find(id);
  std::lock_guard<std::mutex> lock(hook_mu_);
  if (e) e->abort_hook = std::move(hook);
}

void Watchdog::ClearAbortHook(int id) {
  auto e = Find(id);
  std::lock_guard<std::mutex> lock(hook_mu_);
  if (e) e->abort_hook = nullptr;
}

void Watchdog::Start() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "%swatchdog not started: pipe: %s\n", Prefix().c_str(), std::strerror(errno));
    return;
  }
  wake_read_ = fds[0];
  wake_write_ = fds[1];
  g_sigusr1.store(false);
  g_wake_fd.store(wake_write_);
  struct sigaction sa{};
  sa.sa_handler = OnSigusr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGUSR1, &sa, &g_old_sigusr1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
  running_ = true;
}

void Watchdog::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  const char c = 0;
  [[maybe_unused]] const ssize_t n = ::write(wake_write_, &c, 1);
  thread_.join();
  ::sigaction(SIGUSR1, &g_old_sigusr1, nullptr);
  g_wake_fd.store(-1);
  ::close(wake_read_);
  ::close(wake_write_);
  wake_read_ = wake_write_ = -1;
  running_ = false;
}

void Watchdog::Loop() {
  for (;;) {
    pollfd p{wake_read_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(kTick.count()));
    char buf[64];
    while (::read(wake_read_, buf, sizeof buf) > 0) {
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    Tick();
  }
}

void Watchdog::Tick() {
  if (g_sigusr1.exchange(false)) {
    try {
      const std::string path = DumpNow("SIGUSR1");
      std::fprintf(stderr, "%sSIGUSR1: flight recorder dump written to %s\n", Prefix().c_str(),
                   path.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%sSIGUSR1: no dump: %s\n", Prefix().c_str(), e.what());
    }
  }
  for (const auto& e : Entries()) {
    if (e->reg.channel) {
      const auto request = e->reg.channel->CurrentRequest();
      bool fresh = false;
      if (request) {
        std::lock_guard<std::mutex> lock(mu_);
        fresh = *request != e->answered;
      }
      if (fresh) Answer(e, *request);
    }
    if (const auto f = e->reg.recorder->in_flight()) {
      const auto& id = e->reg.recorder->identity();
      const auto limit =
          (f->seq == 0 ? std::max(id.deadline, id.first_deadline) : id.deadline) + kStuckGrace;
      if (Clock::now() - f->since > limit && f->seq != e->stuck_handled) {
        e->stuck_handled = f->seq;
        HandleStuck(e, *f);
      }
    }
  }
}

void Watchdog::Answer(const std::shared_ptr<Entry>& e, const std::string& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    e->answered = request;
  }
  const RankDump dump = BuildDump("request " + request, request, e.get());
  try {
    std::lock_guard<std::mutex> lock(dump_mu_);
    WriteDumpFile(e->reg.trace_dir, dump);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "%sdump requested, file not written: %s\n", Prefix().c_str(), ex.what());
  }
  try {
    e->reg.channel->Publish(dump);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "%sdump requested, not published in the store: %s\n", Prefix().c_str(),
                 ex.what());
  }
}

void Watchdog::HandleStuck(const std::shared_ptr<Entry>& e, const FlightRecorder::InFlight& f) {
  const auto& id = e->reg.recorder->identity();
  const double s = std::chrono::duration<double>(Clock::now() - f.since).count();
  std::fprintf(stderr,
               "%scollective #%lld of %s has been in flight for %.2f s, past its deadline "
               "(%.2f s): the main thread is stuck inside the engine; asking every rank for "
               "its dump\n",
               Prefix().c_str(), static_cast<long long>(f.seq), id.name.c_str(), s,
               std::chrono::duration<double>(
                   f.seq == 0 ? std::max(id.deadline, id.first_deadline) : id.deadline)
                   .count());
  const Report r = OnFailure(e->id, "deadline (main thread stuck in the engine)", kStuckGrace);
  std::fprintf(stderr, "%s\n", r.text.c_str());
  std::lock_guard<std::mutex> lock(hook_mu_);
  if (e->abort_hook) {
    std::fprintf(stderr, "%saborting the communicator\n", Prefix().c_str());
    e->abort_hook();
  }
}

Watchdog::Report Watchdog::OnFailure(int id, const std::string& reason,
                                     std::chrono::milliseconds wait) {
  const auto until = Clock::now() + wait;
  Report report;
  auto e = Find(id);
  if (!e) return report;
  std::string request, store_note;
  if (e->reg.channel) {
    try {
      request = e->reg.channel->Request();
      std::lock_guard<std::mutex> lock(mu_);
      e->answered = request;  // this rank answers it below, not its watchdog thread
    } catch (const std::exception& ex) {
      store_note = std::string("the store could not carry the request: ") + ex.what();
    }
  }
  const RankDump mine = BuildDump(reason, request, e.get());
  std::string dump_note;
  try {
    std::lock_guard<std::mutex> lock(dump_mu_);
    report.dump_path = WriteDumpFile(e->reg.trace_dir, mine);
  } catch (const std::exception& ex) {
    dump_note = std::string("this rank's dump file was not written: ") + ex.what();
  }
  DumpChannel::Collected got;
  if (e->reg.channel && !request.empty()) {
    try {
      e->reg.channel->Publish(mine);
      e->reg.channel->PublishLast(mine);  // for ranks whose request this rank will not see
    } catch (const std::exception& ex) {
      store_note = std::string("this rank's dump was not published: ") + ex.what();
    }
    got = e->reg.channel->Collect(mine, request, until);
  } else {
    got.dumps.resize(static_cast<std::size_t>(mine.world_size));
    got.notes.assign(static_cast<std::size_t>(mine.world_size), "no store to ask it through");
    got.dumps[static_cast<std::size_t>(mine.rank)] = mine;
  }
  AnalyzeOptions options;
  options.prefer_comm = e->reg.recorder->identity().name;
  options.no_dump_notes = got.notes;
  const Analysis a = Analyze(got.dumps, options);
  int n = 0;
  for (const auto& d : got.dumps) n += d.has_value();
  report.verdict = a.verdict;
  report.klass = a.klass;
  report.culprits = a.culprits;
  const std::string head = "desync report (flight recorder dumps of " + std::to_string(n) + " of " +
                           std::to_string(got.dumps.size()) + " ranks, collected in " +
                           Seconds(got.waited_s) + "; files in " + e->reg.trace_dir + "):\n";
  report.text = head + a.report;
  for (const auto& note : {store_note, dump_note}) {
    if (!note.empty()) report.text += note + "\n";
  }
  while (!report.text.empty() && report.text.back() == '\n') report.text.pop_back();
  return report;
}

void Watchdog::PublishLast(int id) {
  auto e = Find(id);
  if (!e || !e->reg.channel) return;
  try {
    e->reg.channel->PublishLast(BuildDump("exit (communicator destroyed)", "", e.get()));
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "%sfinal dump not published in the store: %s\n", Prefix().c_str(),
                 ex.what());
  }
}

std::string Watchdog::DumpNow(const std::string& reason, const std::string& request) {
  std::string dir;
  for (const auto& e : Entries()) {
    dir = e->reg.trace_dir;
    break;
  }
  if (dir.empty()) return "";
  const RankDump dump = BuildDump(reason, request);
  std::lock_guard<std::mutex> lock(dump_mu_);
  return WriteDumpFile(dir, dump);
}

RankDump ComposeDump(const std::string& reason, const std::string& request,
                     const FlightRecorder* primary, const std::string& primary_run_id,
                     const std::vector<std::pair<const FlightRecorder*, std::string>>& others) {
  RankDump d;
  d.host = HostName();
  d.pid = ::getpid();
  d.reason = reason;
  d.request = request;
  auto add = [&d](const FlightRecorder& recorder, const std::string& run_id) {
    d.comms.push_back(recorder.Snapshot());
    if (d.comms.size() == 1) {
      d.rank = d.comms[0].rank;
      d.world_size = d.comms[0].world_size;
      d.run_id = run_id;
    }
  };
  if (primary != nullptr) add(*primary, primary_run_id);
  for (const auto& [recorder, run_id] : others) {
    if (recorder != primary) add(*recorder, run_id);
  }
  d.dump_unix_s = UnixNow();
  return d;
}

RankDump Watchdog::BuildDump(const std::string& reason, const std::string& request,
                             const Entry* primary) {
  // The primary's own recorder, not its place in entries_: the main thread
  // may have unregistered it a moment ago (the caller's shared_ptr keeps it).
  std::vector<std::pair<const FlightRecorder*, std::string>> others;
  for (const auto& e : Entries()) others.emplace_back(e->reg.recorder.get(), e->reg.run_id);
  return ComposeDump(reason, request, primary ? primary->reg.recorder.get() : nullptr,
                     primary ? primary->reg.run_id : "", others);
}

std::shared_ptr<Watchdog::Entry> Watchdog::Find(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : entries_) {
    if (e->id == id) return e;
  }
  return nullptr;
}

std::vector<std::shared_ptr<Watchdog::Entry>> Watchdog::Entries() {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

std::string Watchdog::Prefix() {
  const auto entries = Entries();
  if (entries.empty()) return "[ddp::trace] ";
  return "[ddp::trace rank " + std::to_string(entries[0]->reg.recorder->identity().rank) + "] ";
}

}  // namespace ddp::trace
