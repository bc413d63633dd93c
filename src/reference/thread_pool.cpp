#include "reference/thread_pool.h"

#include <algorithm>
#include <string>
#include <system_error>

#include "core/error.h"

namespace tilefuse::reference {
namespace {

// True on pool workers and on a caller while it runs chunks: a nested
// parallel_for then runs inline instead of waiting on workers that are busy
// with the outer job (which would deadlock).
thread_local bool t_inside_job = false;

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  num_threads = std::max(num_threads, 1);
  workers_.reserve(static_cast<size_t>(num_threads - 1));
  try {
    for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (const std::system_error& e) {
    // The destructor does not run for a constructor that throws: stop and
    // join the workers already started here, then say what failed.
    const size_t started = workers_.size();
    stop_workers();
    throw UserError("could not start " + std::to_string(num_threads - 1) +
                    " worker threads (" + std::to_string(started) +
                    " started): " + e.what() + "; ask for fewer threads");
  }
}

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::parallel_for(int64_t n, int64_t grain, const RangeFn& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t wanted = (n + grain - 1) / grain;
  if (workers_.empty() || wanted <= 1 || t_inside_job) {
    fn(0, n);
    return;
  }
  // Many chunks per thread balance uneven work (GEMM edge tiles, a thread
  // descheduled on a shared machine); claiming one costs a mutex round trip.
  const int64_t num_chunks = std::min<int64_t>(wanted, 64 * int64_t{num_threads()});
  // Only the workers the chunks can use are asked to join (a job of 3
  // chunks on a pool of 1,024 threads woke all 1,023 workers and waited for
  // each to be scheduled and leave).
  int helpers = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    chunk_ = (n + num_chunks - 1) / num_chunks;
    num_chunks_ = (n + chunk_ - 1) / chunk_;
    next_chunk_ = 0;
    error_ = nullptr;
    helpers = static_cast<int>(std::min<int64_t>(num_chunks_ - 1, int64_t(workers_.size())));
    joinable_ = helpers;
    busy_ = 0;
    ++generation_;
  }
  if (helpers == static_cast<int>(workers_.size())) {
    work_cv_.notify_all();
  } else {
    for (int i = 0; i < helpers; ++i) work_cv_.notify_one();
  }
  t_inside_job = true;
  run_chunks();
  t_inside_job = false;
  std::unique_lock<std::mutex> lock(mu_);
  // No worker joins from here on (one woken late finds no chunk either), so
  // the job's state outlives every worker inside it.
  joinable_ = 0;
  done_cv_.wait(lock, [this] { return busy_ == 0; });
  fn_ = nullptr;
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void ThreadPool::run_chunks() {
  for (;;) {
    int64_t c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_chunk_ >= num_chunks_) return;
      c = next_chunk_++;
    }
    const int64_t begin = c * chunk_;
    const int64_t end = std::min(n_, begin + chunk_);
    try {
      (*fn_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      next_chunk_ = num_chunks_;  // skip what is left: the job has failed
    }
  }
}

void ThreadPool::worker_loop() {
  t_inside_job = true;
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (generation_ != seen && joinable_ > 0); });
    if (stop_) return;
    seen = generation_;
    --joinable_;
    ++busy_;
    lock.unlock();
    run_chunks();
    lock.lock();
    if (--busy_ == 0) done_cv_.notify_one();
  }
}

}  // namespace tilefuse::reference
