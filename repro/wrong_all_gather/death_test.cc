// Only Gloo's abort and a supervisor's kill count as the bug's symptom; a
// rank killed from outside, stopped, or crashing in our code does not.
#include "repro/wrong_all_gather/death.h"

#include <csignal>

#include "gtest/gtest.h"

namespace ddp::wrong_all_gather {
namespace {

launch::RankOutcome Signalled(int sig, const std::string& err = "") {
  launch::RankOutcome o;
  o.signal = sig;
  o.stderr_text = err;
  return o;
}

TEST(Death, GloosAbortOnTheOversizedMessageIsTheEngine) {
  // What Gloo's loop thread leaves on stderr when it throws on a message
  // longer than the posted buffer.
  EXPECT_EQ(ClassifyDeath(Signalled(SIGABRT,
                                    "terminate called after throwing an instance of "
                                    "'gloo::EnforceNotMet'\n  what():  [enforce fail at "
                                    "pair.cc:...]\n")),
            Death::kEngine);
}

TEST(Death, AnAbortThatDoesNotNameGlooIsForeign) {
  EXPECT_EQ(ClassifyDeath(Signalled(SIGABRT, "variants.cc:12: assertion failed\n")),
            Death::kForeign);
  EXPECT_EQ(ClassifyDeath(Signalled(SIGABRT)), Death::kForeign);
}

TEST(Death, KilledFromOutsideIsForeign) {
  EXPECT_EQ(ClassifyDeath(Signalled(SIGKILL)), Death::kForeign);
  EXPECT_EQ(ClassifyDeath(Signalled(SIGTERM)), Death::kForeign);
  EXPECT_EQ(ClassifyDeath(Signalled(SIGSEGV, "gloo::EnforceNotMet")), Death::kForeign);
}

TEST(Death, AnExitWithoutAReportIsForeign) {
  launch::RankOutcome o;
  o.exited = true;
  o.exit_code = 1;
  EXPECT_EQ(ClassifyDeath(o), Death::kForeign);
}

TEST(Death, AFailureThatBlamesAPeerIsAConsequence) {
  // A rank still connecting when Gloo aborted a peer: exit 3, its report
  // saying a peer caused it.
  launch::RankOutcome o;
  o.exited = true;
  o.exit_code = 3;
  o.caused_by_peer = true;
  o.failure_report = "gloo rendezvous of rank 3 of 4 ... Connection closed by peer";
  EXPECT_EQ(ClassifyDeath(o), Death::kPeer);
  o.caused_by_peer = false;  // its own failure: not the engine's doing
  EXPECT_EQ(ClassifyDeath(o), Death::kForeign);
}

TEST(Death, EndedByTheSupervisorIsAHangOrAPeersFailure) {
  launch::RankOutcome o = Signalled(SIGKILL);
  o.killed = true;
  o.timed_out = true;
  EXPECT_EQ(ClassifyDeath(o), Death::kSupervisor);
  // Stopped (SIGSTOP from someone) before the supervisor ended it: foreign.
  o.stopped = true;
  o.stop_signal = SIGSTOP;
  EXPECT_EQ(ClassifyDeath(o), Death::kForeign);
}

}  // namespace
}  // namespace ddp::wrong_all_gather
