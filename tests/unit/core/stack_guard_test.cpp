// The stack budget of recursive walks (core/stack_guard.h): a recursion that
// calls check_stack() at each level stops with ProgramTooLarge while stack
// is left, on a thread with a small stack and on the main thread alike,
// instead of overflowing it (SIGSEGV).
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstring>
#include <string>

#include "core/stack_guard.h"

namespace tilefuse {
namespace {

// Each level holds 4 KiB on the stack and checks before going deeper.
int descend(int level, int limit) {
  volatile char frame[4096];
  std::memset(const_cast<char*>(frame), level & 0xff, sizeof frame);
  check_stack("a test recursion", SourceLoc{3, 7, 1});
  if (level == limit) return frame[level % 4096];
  return descend(level + 1, limit) + frame[0];
}

struct Outcome {
  bool threw = false;
  std::string message;
  SourceLoc loc;
};

void* run_deep(void* out) {
  auto* o = static_cast<Outcome*>(out);
  try {
    descend(0, 1 << 30);  // never reached: 4 TiB of frames
  } catch (const ProgramTooLarge& e) {
    o->threw = true;
    o->message = e.what();
    o->loc = e.loc();
  }
  return nullptr;
}

TEST(StackGuard, ADeepRecursionOnASmallStackThrowsInsteadOfCrashing) {
  for (size_t stack : {size_t{256} << 10, size_t{1} << 20, size_t{8} << 20}) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    ASSERT_EQ(pthread_attr_setstacksize(&attr, stack), 0);
    Outcome out;
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, &attr, run_deep, &out), 0);
    pthread_join(t, nullptr);
    pthread_attr_destroy(&attr);
    EXPECT_TRUE(out.threw) << stack;
    EXPECT_NE(out.message.find("program too large: a test recursion is nested too deeply"),
              std::string::npos)
        << out.message;
    EXPECT_EQ(out.loc.line, 3);
    EXPECT_EQ(out.loc.col, 7);
  }
}

TEST(StackGuard, OnTheMainThreadToo) {
  Outcome out;
  run_deep(&out);
  EXPECT_TRUE(out.threw);
}

TEST(StackGuard, ShallowWalksPassAndStackLeftShrinks) {
  EXPECT_NO_THROW(descend(0, 10));
  const size_t top = stack_left();
  volatile char pad[8192];
  pad[0] = 1;
  EXPECT_GT(top, size_t{0});
  struct Inner {
    static size_t left() { return stack_left(); }
  };
  EXPECT_LE(Inner::left(), top);
  (void)pad[0];
}

}  // namespace
}  // namespace tilefuse
