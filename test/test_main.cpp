// Catch2 main: pins the Vulkan environment, runs the tests, then destroys the shared device and
// fails the run if the validation layer had anything to say while tearing it down.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "harness.h"
#include "test_util.h"

int main(int argc, char** argv) {
  vt::PinTestDriver();
  Catch::Session session;
  using namespace Catch::clara;
  bool fastCompile = false;
  session.cli(session.cli() |
              Opt(vt::ArgShare(),
                  "r/n")["--share"]("run the cases of each random sweep whose number hashes to r "
                                    "modulo n (test_util.h: SweepRuns)") |
              Opt(fastCompile)["--fast-compile"](
                  "lavapipe compiles pipelines without LLVM's optimization passes "
                  "(GALLIVM_PERF=nopt, unless set): for the reruns, whose point is vkdml's "
                  "layouts, limits and large path, not lavapipe's code"));
  int failed = session.applyCommandLine(argc, argv);
  if (fastCompile) setenv("GALLIVM_PERF", "nopt", 0);  // before any Vulkan call
  if (failed == 0 && !vt::ArgShare().empty()) {
    try {
      vt::InShare("--share ", vt::ArgShare().c_str(), 0, 0);  // malformed: fail now, not later
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      failed = 2;
    }
  }
  if (failed == 0) failed = session.run();
  if (vt::HaveDevice()) {
    vt::DestroyDevice();
    std::vector<std::string> messages = vt::TakeValidationMessages();
    for (const std::string& m : messages)
      std::fprintf(stderr, "validation message while destroying the device:\n%s\n", m.c_str());
    if (!messages.empty() && failed == 0) failed = 1;
  }
  return failed;
}
