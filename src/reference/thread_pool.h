// A small fork-join thread pool for the reference evaluator's loops.
//
// `parallel_for(n, grain, fn)` splits [0, n) into chunks of at least `grain`
// iterations and runs fn(begin, end) on each, on the pool's workers and the
// calling thread, and returns when every chunk is done. The first exception a
// chunk throws is rethrown in the caller (the other chunks still finish or
// are skipped). A parallel_for issued from inside a chunk runs serially on
// that thread, so kernels may nest them freely.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tilefuse::reference {

// The most threads a pool may be asked for (the CLI's --threads and the C
// API's tf_options.threads): a thread each, so an absurd count would
// exhaust the machine's thread limit before failing.
inline constexpr int kMaxThreads = 1024;

class ThreadPool {
 public:
  // `num_threads` counts the calling thread; 0 means hardware_concurrency().
  // Throws UserError (after joining the threads it started) when the system
  // refuses a thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  using RangeFn = std::function<void(int64_t begin, int64_t end)>;
  void parallel_for(int64_t n, int64_t grain, const RangeFn& fn);

 private:
  void worker_loop();
  // Sets stop_, wakes and joins every worker (the destructor; a constructor
  // whose thread start failed).
  void stop_workers();
  // Runs chunks of the current job until none is left.
  void run_chunks();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  bool stop_ = false;
  uint64_t generation_ = 0;  // bumped for each job so a worker joins it once

  // The current job (valid while busy_ workers are inside it).
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  int64_t num_chunks_ = 0;
  int64_t next_chunk_ = 0;  // guarded by mu_
  int joinable_ = 0;        // workers the job may still take (guarded by mu_)
  int busy_ = 0;            // workers inside the job
  std::exception_ptr error_;
};

}  // namespace tilefuse::reference
