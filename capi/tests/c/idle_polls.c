/*
 * A zero timeout from C is a try, for every object: a guest job worker whose
 * `hos_*(…, 0)` call finds nothing and then sleeps 20 us is an idle poller of that object,
 * and the host call that makes the object ready promotes its sleep (the runtime stretches
 * an unpromoted one by a second here, so a sleep that was not promoted is plain to see).
 * A poller of what hos cannot see (short sleeps, no other call) is counted apart. A guest
 * thread of better priority that makes the object ready promotes the sleep when it next gives
 * its core up, not at once (HOS_IDLE_POLL_DEFER).
 * Run by capi/tests/c_hosts.rs.
 */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static hos_runtime *rt;
static hos_handle queue, full_queue, event, semaphore, mutex, condvar, cv_mutex;

static hos_stats stats(void) {
    hos_stats s = {.size = sizeof s};
    OK(hos_stats_get(rt, &s));
    return s;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One poll that must find nothing, by object. */
static void poll_queue(void) {
    uint64_t m = 0;
    EXPECT(hos_queue_receive(queue, &m, 0), HOS_RESULT_TIMED_OUT);
}
static void poll_full_queue(void) { EXPECT(hos_queue_send(full_queue, 2, 0), HOS_RESULT_TIMED_OUT); }
static void poll_event(void) { EXPECT(hos_event_wait(event, 0), HOS_RESULT_TIMED_OUT); }
static void poll_semaphore(void) { EXPECT(hos_semaphore_acquire(semaphore, 0), HOS_RESULT_TIMED_OUT); }
static void poll_mutex(void) { EXPECT(hos_mutex_lock(mutex, 0), HOS_RESULT_TIMED_OUT); }
static void poll_condvar(void) {
    OK(hos_mutex_lock(cv_mutex, -1));
    EXPECT(hos_condvar_wait(condvar, cv_mutex, 0), HOS_RESULT_TIMED_OUT);
    OK(hos_mutex_unlock(cv_mutex));
}

/* What makes each object ready, from the host. */
static void ready_queue(void) { OK(hos_queue_send(queue, 7, -1)); }
static void ready_full_queue(void) {
    uint64_t m = 0;
    OK(hos_queue_receive(full_queue, &m, -1));
}
static void ready_event(void) { OK(hos_event_signal(event)); }
static void ready_semaphore(void) { OK(hos_semaphore_release(semaphore, 1)); }
static void ready_condvar(void) { OK(hos_condvar_signal(condvar)); }

static double slept;
static atomic_int worker_done; /* set once the worker's sleep ended */

/* The worker's poll, passed as an object pointer (ISO C casts no function pointer to one). */
struct poll_fn {
    void (*poll)(void);
};

static void worker(void *arg) {
    ((struct poll_fn *)arg)->poll();
    double t = seconds();
    hos_svc_sleep_thread(20000);
    slept = seconds() - t;
    atomic_store(&worker_done, 1);
}

/* Starts a worker (priority 45) whose poll is `f` and returns once its sleep is an idle poll
 * (counted since `before`). */
static hos_handle start_worker(struct poll_fn *f, hos_stats before) {
    atomic_store(&worker_done, 0);
    hos_thread_params p = {.size = sizeof p, .name = "ModuleSystemWorker0", .priority = 45,
                           .ideal_core = -2, .core_mask = 0x3f};
    hos_handle t = 0;
    OK(hos_thread_spawn(rt, &p, worker, f, &t));
    double limit = seconds() + 10;
    while (stats().idle_polls == before.idle_polls && seconds() < limit) {
        OK(hos_host_sleep(rt, 1000000));
    }
    OK(hos_host_sleep(rt, 2000000));
    return t;
}

/* The mutex's holder: a guest thread that holds it until told to let go. */
static hos_handle let_go;
static void holder(void *arg) {
    (void)arg;
    OK(hos_mutex_lock(mutex, -1));
    OK(hos_event_wait(let_go, -1));
    OK(hos_mutex_unlock(mutex));
}

static void promoted_by(const char *what, void (*poll)(void), void (*ready)(void)) {
    hos_stats before = stats();
    struct poll_fn f = {poll};
    hos_handle t = start_worker(&f, before);
    ready();
    OK(hos_thread_join(t, -1));
    OK(hos_svc_close_handle(t));
    hos_stats after = stats();
    if (after.idle_polls != before.idle_polls + 1 || after.idle_promoted != before.idle_promoted + 1 ||
        after.idle_deferred != before.idle_deferred) {
        fprintf(stderr, "%s: idle polls %" PRIu64 ", promoted %" PRIu64 ", slept %.6f s\n", what,
                after.idle_polls - before.idle_polls, after.idle_promoted - before.idle_promoted,
                slept);
        failures++;
    }
    TRUE(slept >= 20e-6);
    TRUE(slept < 0.5);
}

static void unlock_mutex(void) { OK(hos_event_signal(let_go)); }

/* The promoter, a guest thread of better priority: it sends, keeps its core 100 ms (a libc
 * sleep gives hos nothing), notes whether the worker woke meanwhile, then sleeps through hos
 * (giving its core up). */
static int woke_meanwhile = -1;
static void promoter(void *arg) {
    (void)arg;
    ready_queue();
    struct timespec ms100 = {0, 100000000};
    nanosleep(&ms100, NULL);
    woke_meanwhile = atomic_load(&worker_done);
    hos_svc_sleep_thread(20000);
}

static void deferred_by_a_better_guest_thread(void) {
    uint64_t left = 0; /* the message promoted_by sent the queue's poller */
    while (hos_queue_receive(queue, &left, 0) == HOS_RESULT_SUCCESS) {
    }
    hos_stats before = stats();
    struct poll_fn f = {poll_queue};
    hos_handle w = start_worker(&f, before), p = 0;
    hos_thread_params pp = {.size = sizeof pp, .name = "MainThread", .priority = 44,
                            .ideal_core = -2, .core_mask = 0x3f};
    OK(hos_thread_spawn(rt, &pp, promoter, NULL, &p));
    OK(hos_thread_join(p, -1));
    OK(hos_thread_join(w, -1));
    OK(hos_svc_close_handle(p));
    OK(hos_svc_close_handle(w));
    hos_stats after = stats();
    TRUE(woke_meanwhile == 0);
    TRUE(after.idle_promoted == before.idle_promoted + 1);
    TRUE(after.idle_deferred == before.idle_deferred + 1);
    TRUE(slept < 0.5);
}

/* A poller of what hos cannot see: 20 short sleeps in a row, no other call between them. */
static void unseen(void *arg) {
    (void)arg;
    for (int i = 0; i < 20; i++) {
        hos_svc_sleep_thread(20000);
    }
}

/* Its sleeps are unseen pollers' (armed by `poller_margin_ns`) from the 8th of the run of
 * quiet ones, which begins at its second sleep: the first follows the calls that started
 * the thread. So 12 of 20. */
static void unseen_pollers_are_told_apart(void) {
    hos_stats before = stats();
    hos_thread_params p = {.size = sizeof p, .name = "ModuleSystemWorker1", .priority = 45,
                           .ideal_core = -2, .core_mask = 0x3f};
    hos_handle t = 0;
    OK(hos_thread_spawn(rt, &p, unseen, NULL, &t));
    OK(hos_thread_join(t, -1));
    OK(hos_svc_close_handle(t));
    hos_stats after = stats();
    if (after.unseen_polls - before.unseen_polls != 12) {
        fprintf(stderr, "unseen pollers' sleeps: %" PRIu64 " of 20, not 12\n",
                after.unseen_polls - before.unseen_polls);
        failures++;
    }
    TRUE(after.poller_margin_ns > 0 && after.poller_margin_ns <= 2000000);
}

int main(void) {
    hos_config *cfg = NULL;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_IDLE_POLL_STRETCH_US", "1000000"));
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);

    OK(hos_queue_create(1, &queue));
    OK(hos_queue_create(1, &full_queue));
    OK(hos_queue_send(full_queue, 1, -1));
    OK(hos_event_create(1, &event));
    OK(hos_semaphore_create(0, 1, &semaphore));
    OK(hos_mutex_create(0, &mutex));
    OK(hos_condvar_create(&condvar));
    OK(hos_mutex_create(0, &cv_mutex));
    OK(hos_event_create(1, &let_go));

    promoted_by("hos_queue_receive(0)", poll_queue, ready_queue);
    promoted_by("hos_queue_send(0)", poll_full_queue, ready_full_queue);
    promoted_by("hos_event_wait(0)", poll_event, ready_event);
    promoted_by("hos_semaphore_acquire(0)", poll_semaphore, ready_semaphore);
    promoted_by("hos_condvar_wait(0)", poll_condvar, ready_condvar);
    deferred_by_a_better_guest_thread();

    hos_thread_params hp = {.size = sizeof hp, .name = "Holder", .priority = 45,
                            .ideal_core = -2, .core_mask = 0x3f};
    hos_handle h = 0;
    OK(hos_thread_spawn(rt, &hp, holder, NULL, &h));
    double limit = seconds() + 10;
    while (hos_mutex_lock(mutex, 0) == HOS_RESULT_SUCCESS && seconds() < limit) {
        OK(hos_mutex_unlock(mutex)); /* the holder has not taken it yet */
        OK(hos_host_sleep(rt, 1000000));
    }
    promoted_by("hos_mutex_lock(0)", poll_mutex, unlock_mutex);
    unseen_pollers_are_told_apart();
    OK(hos_thread_join(h, -1));
    OK(hos_svc_close_handle(h));

    hos_handle all[] = {queue, full_queue, event, semaphore, mutex, condvar, cv_mutex, let_go};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        OK(hos_svc_close_handle(all[i]));
    }
    OK(hos_runtime_shutdown(rt, -1));
    hos_runtime_free(rt);
    return finish("every zero-timeout call was an idle poll, a better guest's promotion deferred, "
                  "and unseen pollers told apart");
}
