// The doctest main of every test executable. One addition to doctest's own: a run in which no test
// case passes the filters fails. CTest runs each case through its name (--test-case=NAME), so a
// name that CTest's discovery cut or mangled (a ';' in it, say) would otherwise pass without
// running anything.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

int selected_cases = -1;  // test cases that passed the filters in the last run; -1: no run

/// Listens for the end of the run and keeps how many test cases it selected.
struct selection_listener : doctest::IReporter {
  explicit selection_listener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    selected_cases = static_cast<int>(stats.numTestCasesPassingFilters);
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("selection", 1, selection_listener);

} // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || result != 0)
    return result;
  if (selected_cases == 0) {
    std::fprintf(stderr, "no test case matches the filters: nothing was tested\n");
    return 1;
  }
  return result;
}
