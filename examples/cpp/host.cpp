// The C host (examples/c/host.c) in C++ through hos.hpp: boots a runtime from the environment,
// runs a MainThread and 5 job workers that exchange work through a queue and an event, prints
// the stats, and shuts down. Here the host's own main thread attaches as the MainThread (as a
// JIT's thread would) instead of spawning one, and starts the workers with a kernel event
// (one signal wakes them all, as a SystemEvent's does). Before the start it prints the wait
// tree (the workers waiting on the event); the MainThread marks each frame, so with
// HOS_TRACE=path it prints each frame's critical path; then the shutdown's report.
//
//   c++ -std=c++17 -Iinclude examples/cpp/host.cpp target/release/libhos.a
//       -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o host && ./host
//
// Exit status 0 when every job was done exactly once.
#include <hos.hpp>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr int kWorkers = 5;
constexpr int kFrames = 60;
constexpr int kJobsPerFrame = 10;
constexpr uint64_t kStop = UINT64_MAX;

// Stops the program on a failed call.
void ok(hos_result r, const char* what) {
    if (r != HOS_RESULT_SUCCESS) {
        std::fprintf(stderr, "%s: %s: %s\n", what, hos_result_name(r), hos_last_error_message());
        std::exit(1);
    }
}

struct Shared {
    hos::Queue jobs{kJobsPerFrame};
    hos::Event frame_done{hos::Event::Clear::Auto};
    hos::KernelEvent start;
    hos::Mutex tally_lock;
    std::atomic<int> pending{0};
    uint64_t sum = 0;  // under tally_lock
    std::atomic<uint64_t> polls{0};
};

void worker(Shared& s) {
    ok(s.start.wait(), "start");
    for (;;) {
        uint64_t job = 0;
        hos_result r = s.jobs.receive(job, 0);
        if (r == HOS_RESULT_TIMED_OUT) {
            s.polls++;
            hos_svc_sleep_thread(20000);  // an idle poller's 20 us guest sleep
            continue;
        }
        ok(r, "receive");
        if (job == kStop) {
            return;
        }
        {
            std::lock_guard<hos::Mutex> hold(s.tally_lock);
            s.sum += job;
        }
        if (s.pending.fetch_sub(1) == 1) {
            ok(s.frame_done.signal(), "signal");
        }
    }
}

// Waits (at most 2 s) until every worker waits on the start event, and prints the tree.
void print_waiting_workers(hos::Runtime& rt) {
    for (int tries = 0; tries < 2000; tries++) {
        std::vector<hos_wait_node> tree = rt.wait_tree();
        int waiting = 0;
        for (const hos_wait_node& n : tree) {
            waiting += n.state == HOS_WAIT_STATE_WAITING;
        }
        if (waiting == kWorkers) {
            break;
        }
        rt.host_sleep(1000000);
    }
    std::printf("%s", rt.wait_tree_text().c_str());
}

void main_thread(Shared& s, hos::Runtime& rt) {
    ok(s.start.signal(), "start");
    uint64_t next = 1;
    for (int frame = 0; frame < kFrames; frame++) {
        rt.frame_mark();  // the present
        s.pending = kJobsPerFrame;
        for (int j = 0; j < kJobsPerFrame; j++) {
            ok(s.jobs.send(next++), "send");
        }
        ok(s.frame_done.wait(), "wait");
        hos_svc_sleep_thread(1000000);  // the frame limiter
    }
    for (int w = 0; w < kWorkers; w++) {
        ok(s.jobs.send(kStop), "send stop");
    }
}

}  // namespace

int main() {
    try {
        hos::Config cfg;
        cfg.read_env();
        hos::Runtime rt(cfg);
        uint64_t all = (uint64_t{1} << rt.cores()) - 1;
        uint64_t want = 0;
        {
            Shared s;
            std::vector<hos::Thread> threads;
            for (int w = 0; w < kWorkers; w++) {
                hos::ThreadParams p{"ModuleSystemWorker" + std::to_string(w), 45, -2,
                                    rt.cores() > 1 ? all & ~uint64_t{1} : all};
                threads.emplace_back(rt, p, [&s] { worker(s); });
            }
            print_waiting_workers(rt);
            {
                hos::AttachedThread self(rt, hos::ThreadParams{"MainThread", 44, 0, 0x1});
                main_thread(s, rt);
            }  // detached
            for (auto& t : threads) {
                ok(t.join(), "join");
            }
            uint64_t jobs = uint64_t{kFrames} * kJobsPerFrame;
            want = jobs * (jobs + 1) / 2;
            hos_stats st = rt.stats();
            std::printf("%d frames, %" PRIu64 " jobs, sum %" PRIu64 " (want %" PRIu64
                        "), %" PRIu64 " empty polls\n",
                        kFrames, jobs, s.sum, want, s.polls.load());
            std::printf("guest sleeps: %" PRIu64 " timer, %" PRIu64 " precise, %" PRIu64
                        " relaxed, %" PRIu64 " idle polls; vcore waits %" PRIu64
                        ", escapes %" PRIu64 "\n",
                        st.sleep_timer.count,
                        st.sleep_precise_own.count + st.sleep_precise_reactor.count,
                        st.sleep_relaxed.count, st.sleep_idle_poll.count, st.vcore_waits,
                        st.vcore_escapes);
            std::printf("%s", rt.critical_path_text().c_str());
            if (s.sum != want) {
                return 1;
            }
        }  // handles closed here
        ok(rt.shutdown(1000000000), "shutdown");
        std::printf("%s\n", rt.shutdown_report_text().c_str());
        return rt.shutdown_report().stragglers == 0 ? 0 : 1;
    } catch (const hos::Error& e) {
        std::fprintf(stderr, "hos: %s\n", e.what());
        return 1;
    }
}
