// hos.hpp's ReaderWriterLock (with std::unique_lock and std::shared_lock), Barrier, and the
// runtime's pause_guests/resume_guests, from C++. Run by capi/tests/c_hosts.rs.
#include <hos.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>

static int failures = 0;

#define TRUE(cond)                                                              \
    do {                                                                        \
        if (!(cond)) {                                                          \
            std::fprintf(stderr, "%s:%d: %s is false\n", __FILE__, __LINE__, #cond); \
            failures++;                                                         \
        }                                                                       \
    } while (0)

int main() {
    hos::Runtime rt;
    hos::ReaderWriterLock rw;
    {
        std::unique_lock<hos::ReaderWriterLock> w(rw);
        TRUE(rw.try_lock());  // the writer again
        rw.unlock();
        std::thread other([&] { TRUE(!rw.try_lock_shared()); });
        other.join();
    }
    {
        std::shared_lock<hos::ReaderWriterLock> r1(rw);
        std::shared_lock<hos::ReaderWriterLock> r2(rw);  // readers together
        std::thread other([&] { TRUE(!rw.try_lock()); });
        other.join();
    }

    hos::Barrier barrier(2);
    std::atomic<int> rounds{0};
    std::atomic<bool> stop{false};
    std::atomic<unsigned long long> count{0};
    hos::Thread spinner(rt, hos::ThreadParams{}, [&] {
        for (int i = 0; i < 10; i++) {
            TRUE(barrier.wait() == HOS_RESULT_SUCCESS);
            rounds++;
        }
        while (!stop) {
            count++;
            hos_checkpoint();
        }
    });
    for (int i = 0; i < 10; i++) {
        TRUE(barrier.wait() == HOS_RESULT_SUCCESS);
    }
    while (count == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    TRUE(rt.pause_guests() == 1);
    unsigned long long at = count;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    TRUE(count == at);
    TRUE(rt.resume_guests() == 1);
    stop = true;
    TRUE(spinner.join() == HOS_RESULT_SUCCESS);
    TRUE(rounds == 10);
    rt.shutdown();
    if (failures > 0) {
        std::fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    std::printf("C++ objects checked\n");
    return 0;
}
