// The timeline recorder (core/trace.h): spans per thread, the window, async spans across threads,
// forward and backward per module, device spans through a fake timer, and the JSON it writes —
// checked by the same validator the parallel tests use (tests/support/trace_check.h), which is
// itself shown to reject what a viewer would mis-draw.
#include <gtest/gtest.h>

#include <thread>

#include "core/autograd.h"
#include "core/trace.h"
#include "ops/ops.h"
#include "tests/support/trace_check.h"

namespace rg {
namespace {
using testing::check_trace_json;
using testing::TraceCheck;

TraceCheck record_and_check(const std::function<void()>& body) {
  trace::start();
  body();
  trace::stop();
  return check_trace_json(trace::json_file({trace::to_json_objects(trace::take(), 0, "rank 0")}));
}

void busy_for_us(int us) {
  const int64_t until = trace::now_ns() + us * 1000;
  while (trace::now_ns() < until) {
  }
}

TEST(Trace, NothingIsRecordedOutsideASession) {
  trace::stop();
  { trace::Span span("test", "outside"); }
  trace::instant("test", "outside too");
  trace::start();
  trace::stop();
  const trace::Recorded r = trace::take();
  EXPECT_TRUE(r.events.empty());
  EXPECT_FALSE(trace::on());
}

// The explain sink: the same events as text, its categories only, in the order they began,
// whether or not the timeline records too; a span given a counter adds its seconds there.
TEST(Trace, ExplainTellsTheChosenCategoriesInOrder) {
  trace::name_this_thread("main");
  trace::explain({"ring", "ddp"});
  EXPECT_TRUE(trace::on());
  double seconds = 0;
  {
    const trace::Span outer("ddp", "outer", &seconds);
    busy_for_us(200);
    trace::instant("ring", [] {
      return trace::Label{"inner", trace::args("bytes", 4096, "to", 1)};
    });
    trace::instant("data", "not told");
  }
  EXPECT_GT(seconds, 150e-6);
  std::thread([] {
    trace::name_this_thread("worker");
    const trace::HandedSpan span("ddp", [] {
      return trace::Label{"bucket 7", trace::args("elements", 3)};
    });
  }).join();
  trace::stop_explaining();
  EXPECT_FALSE(trace::on());
  const std::vector<std::string> lines = trace::take_explained();
  ASSERT_EQ(lines.size(), 4u) << (lines.empty() ? "" : lines[0]);
  EXPECT_NE(lines[0].find("ddp      outer ("), std::string::npos) << lines[0];  // began first
  EXPECT_NE(lines[1].find("ring     inner — bytes 4.0 KiB, to 1"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("[worker] bucket 7 begins — elements 3"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("[worker] bucket 7 ends"), std::string::npos) << lines[3];
  EXPECT_TRUE(trace::take_explained().empty());
  // The timeline and the explain sink are independent.
  trace::start();
  trace::explain();
  trace::stop_explaining();
  EXPECT_TRUE(trace::on());  // the timeline still records
  trace::stop();
  (void)trace::take();
}

TEST(Trace, NestedSpansOfOneThreadNestInTheJson) {
  trace::name_this_thread("main");
  const TraceCheck c = record_and_check([] {
    trace::Span outer("test", "outer");
    outer.set_args(trace::args("bytes", 4096, "peer", "rank \"1\""));
    busy_for_us(50);
    {
      trace::Span inner("test", [] { return std::string("inner ") + std::to_string(1); });
      busy_for_us(50);
    }
    busy_for_us(50);
  });
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  const testing::TraceEvent* outer = c.find("outer");
  const testing::TraceEvent* inner = c.find("inner 1");
  ASSERT_TRUE(outer && inner) << c.summary();
  EXPECT_EQ(outer->tid, inner->tid);
  EXPECT_LE(outer->ts, inner->ts);
  EXPECT_GE(outer->end(), inner->end());
  EXPECT_GE(inner->dur, 40);  // microseconds
  EXPECT_NE(outer->args.find("\"bytes\":4096"), std::string::npos) << outer->args;
  EXPECT_NE(outer->args.find("rank \\\"1\\\""), std::string::npos) << outer->args;
  EXPECT_EQ(c.thread_names.at({0, outer->tid}), "main");
  EXPECT_EQ(c.process_names.at(0), "rank 0");
}

TEST(Trace, EachThreadHasItsOwnNamedTrack) {
  const TraceCheck c = record_and_check([] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t)
      threads.emplace_back([t] {
        trace::name_this_thread("worker " + std::to_string(t));
        trace::Span span("test", [&] { return "work of " + std::to_string(t); });
        busy_for_us(100);
      });
    for (auto& t : threads) t.join();
  });
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  std::set<int> tids;
  for (int t = 0; t < 3; ++t) {
    const testing::TraceEvent* e = c.find("work of " + std::to_string(t));
    ASSERT_TRUE(e) << c.summary();
    tids.insert(e->tid);
    EXPECT_EQ(c.thread_names.at({0, e->tid}), "worker " + std::to_string(t));
  }
  EXPECT_EQ(tids.size(), 3u);  // overlapping spans of different threads: separate tracks
}

TEST(Trace, PauseLeavesTheStepsOutsideTheWindowOut) {
  const TraceCheck c = record_and_check([] {
    { trace::Span a("test", "in the window"); }
    trace::pause();
    { trace::Span b("test", "paused"); }
    trace::resume();
    { trace::Span d("test", "in again"); }
  });
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  EXPECT_TRUE(c.find("in the window"));
  EXPECT_TRUE(c.find("in again"));
  EXPECT_FALSE(c.find("paused"));
}

TEST(Trace, AsyncSpansEndOnAnotherThread) {
  const TraceCheck c = record_and_check([] {
    const uint64_t id = trace::async_begin("ddp", "bucket 0", trace::args("bytes", 12));
    std::thread other([id] {
      busy_for_us(100);
      trace::async_end("ddp", "bucket 0", id);
    });
    other.join();
  });
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  std::vector<const testing::TraceEvent*> b = c.with_name_containing("bucket 0");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0]->id, b[1]->id);
  EXPECT_NE(b[0]->tid, b[1]->tid);
}

// Forward per top-level module from the parameters each op takes; backward as runs of the
// nodes recorded in each module, in reverse.
TEST(Trace, ForwardAndBackwardPerModule) {
  Tensor a = full({64}, 0.5).set_requires_grad(true);
  Tensor b = full({64}, 2.0).set_requires_grad(true);
  trace::set_modules({"first", "second"}, {{a.impl()}, {b.impl()}});
  const TraceCheck c = record_and_check([&] {
    Tensor x = full({64}, 3.0);
    Tensor loss;
    {
      trace::Span forward("forward", "forward");
      trace::ModulePass pass;
      busy_for_us(50);             // an op's time runs from the end of the op before it: this
      Tensor y = relu(mul(x, a));  // is mul's, so first's; relu follows mul: first too
      Tensor z = mul(y, b);        // second
      loss = sum(z);               // still second: no parameter
    }
    trace::Span backward("backward", "backward");
    loss.backward();
  });
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  const testing::TraceEvent* f1 = c.find("forward first");
  const testing::TraceEvent* f2 = c.find("forward second");
  const testing::TraceEvent* b1 = c.find("backward first");
  const testing::TraceEvent* b2 = c.find("backward second");
  ASSERT_TRUE(f1 && f2 && b1 && b2) << c.summary();
  EXPECT_NEAR(f1->end(), f2->ts, 0.002);  // the forward spans tile the pass
  EXPECT_GE(f1->dur, 40);                 // the pause before mul belongs to "first"
  EXPECT_LE(b2->end(), b1->ts + 0.002);   // backward visits "second" first
  EXPECT_TRUE(a.grad().defined() && b.grad().defined());
  trace::set_modules({}, {});
}

// A fake device whose clock is the host's shifted by an hour: the span must come out at the
// host time the marks stood for, on its stream's track.
class FakeTimer final : public trace::DeviceTimer {
 public:
  static constexpr int64_t kShift = 3'600'000'000'000;
  int marks = 0;
  Mark mark(const Device& device) override {
    ++marks;
    return {std::make_shared<int64_t>(trace::now_ns() + kShift), device.str() + " stream 7"};
  }
  double elapsed_ms(const Mark& from, const Mark& to) override {
    return static_cast<double>(*static_cast<int64_t*>(to.handle.get()) -
                               *static_cast<int64_t*>(from.handle.get())) /
           1e6;
  }
};

TEST(Trace, DeviceSpansLandOnTheirStreamAtHostTime) {
  FakeTimer timer;
  trace::set_device_timer(DeviceType::cuda, &timer);
  int64_t before = 0, after = 0;
  trace::start();
  {
    before = trace::now_ns();
    trace::DeviceSpan span(Device::cuda(0), "optimizer step");
    busy_for_us(200);
  }
  after = trace::now_ns();
  { trace::DeviceSpan on_the_cpu(Device::cpu(), "nothing"); }
  trace::stop();
  trace::set_device_timer(DeviceType::cuda, nullptr);
  const trace::Recorded r = trace::take();
  EXPECT_EQ(timer.marks, 4);  // two for the span, two for the anchor; none for the cpu
  const TraceCheck c = check_trace_json(trace::json_file({trace::to_json_objects(r, 0, "r")}));
  ASSERT_TRUE(c.errors.empty()) << c.summary();
  const testing::TraceEvent* e = c.find("optimizer step");
  ASSERT_TRUE(e) << c.summary();
  EXPECT_EQ(e->cat, "device");
  EXPECT_EQ(c.thread_names.at({0, e->tid}), "cuda:0 stream 7");
  const double origin_us = static_cast<double>(r.origin_ns) / 1000;
  EXPECT_GE(e->ts + origin_us, static_cast<double>(before) / 1000 - 5);
  EXPECT_LE(e->end() + origin_us, static_cast<double>(after) / 1000 + 5);
  EXPECT_GE(e->dur, 190);
  EXPECT_FALSE(c.find("nothing"));
}

// The validator rejects what a viewer would draw wrongly.
TEST(TraceCheck, RejectsOverlapsDisorderAndLoneEnds) {
  auto file = [](const std::string& events) { return "{\"traceEvents\":[" + events + "]}"; };
  EXPECT_TRUE(check_trace_json(file(
                                   R"({"ph":"X","name":"a","pid":0,"tid":1,"ts":0,"dur":10},
                                      {"ph":"X","name":"b","pid":0,"tid":1,"ts":2,"dur":3})"))
                  .errors.empty());
  EXPECT_FALSE(check_trace_json(file(
                                    R"({"ph":"X","name":"a","pid":0,"tid":1,"ts":0,"dur":10},
                                       {"ph":"X","name":"b","pid":0,"tid":1,"ts":5,"dur":10})"))
                   .errors.empty());  // overlap without nesting
  EXPECT_TRUE(check_trace_json(file(
                                   R"({"ph":"X","name":"a","pid":0,"tid":1,"ts":0,"dur":10},
                                      {"ph":"X","name":"b","pid":0,"tid":2,"ts":5,"dur":10})"))
                  .errors.empty());  // other track
  EXPECT_FALSE(check_trace_json(file(
                                    R"({"ph":"X","name":"a","pid":0,"tid":1,"ts":5,"dur":1},
                                       {"ph":"X","name":"b","pid":0,"tid":1,"ts":0,"dur":1})"))
                   .errors.empty());  // out of order
  EXPECT_FALSE(check_trace_json(
                   file(R"({"ph":"e","name":"a","pid":0,"tid":1,"ts":0,"id2":{"local":"0x1"}})"))
                   .errors.empty());
  EXPECT_FALSE(check_trace_json(file(R"({"ph":"X","name":"a","pid":0,"tid":1,"ts":0})"))
                   .errors.empty());  // no dur
  EXPECT_FALSE(check_trace_json("{\"traceEvents\": [").errors.empty());
}

}  // namespace
}  // namespace rg
