/*
 * A C host of hos: boots a runtime from the environment (HOS_* switches), runs a MainThread
 * and 5 job workers that exchange work through a queue and an event, prints the stats, and
 * shuts down. The workers poll the queue with 20 us guest sleeps, as a game's idle
 * ModuleSystemWorker threads do; the MainThread paces its frames with 1 ms sleeps and marks
 * each one, so with HOS_TRACE=path the host prints each frame's critical path (and the trace
 * is written to path at the shutdown), then the shutdown's report.
 *
 *   cc -std=c11 -Iinclude examples/c/host.c target/release/libhos.a \
 *      -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o host && ./host
 *
 * Exit status 0 when every job was done exactly once.
 */
#include <hos.h>

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 5
#define FRAMES 60
#define JOBS_PER_FRAME 10
#define STOP UINT64_MAX

/* Stops the program on a failed call, naming it, its code and the detail. */
#define CHECK(call)                                                                       \
    do {                                                                                  \
        hos_result r_ = (call);                                                           \
        if (r_ != HOS_RESULT_SUCCESS) {                                                   \
            fprintf(stderr, "%s:%d: %s: %s (0x%" PRIX32 "): %s\n", __FILE__, __LINE__,    \
                    #call, hos_result_name(r_), r_, hos_last_error_message());            \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

struct shared {
    hos_runtime *rt;
    hos_handle jobs;       /* queue: job ids, STOP to end a worker */
    hos_handle frame_done; /* auto-clear event: the last job of a frame signals it */
    atomic_int pending;    /* jobs of the current frame not done yet */
    atomic_uint_fast64_t sum;
    atomic_uint_fast64_t polls;
};

static void worker(void *arg) {
    struct shared *s = arg;
    for (;;) {
        uint64_t job;
        hos_result r = hos_queue_receive(s->jobs, &job, 0);
        if (r == HOS_RESULT_TIMED_OUT) {
            atomic_fetch_add(&s->polls, 1);
            hos_svc_sleep_thread(20000); /* an idle poller's 20 us guest sleep */
            continue;
        }
        CHECK(r);
        if (job == STOP) {
            return;
        }
        atomic_fetch_add(&s->sum, job);
        if (atomic_fetch_sub(&s->pending, 1) == 1) {
            CHECK(hos_event_signal(s->frame_done));
        }
    }
}

static void main_thread(void *arg) {
    struct shared *s = arg;
    uint64_t next = 1;
    for (int frame = 0; frame < FRAMES; frame++) {
        CHECK(hos_frame_mark(s->rt)); /* the present */
        atomic_store(&s->pending, JOBS_PER_FRAME);
        for (int j = 0; j < JOBS_PER_FRAME; j++) {
            CHECK(hos_queue_send(s->jobs, next++, -1));
        }
        CHECK(hos_event_wait(s->frame_done, -1));
        hos_svc_sleep_thread(1000000); /* the frame limiter */
    }
    for (int w = 0; w < WORKERS; w++) {
        CHECK(hos_queue_send(s->jobs, STOP, -1));
    }
}

/* Prints what a text call of hos.h (buf, size, len: snprintf's rules) gives. */
#define PRINT_TEXT(call_buf_size_len)                                                     \
    do {                                                                                  \
        size_t len = 0, size = 0;                                                         \
        char *buf = NULL;                                                                 \
        CHECK(call_buf_size_len); /* the length */                                        \
        size = len + 1;                                                                   \
        buf = malloc(size);                                                               \
        CHECK(call_buf_size_len);                                                         \
        fputs(buf, stdout); /* cut if it grew in between: fine for a print */             \
        free(buf);                                                                        \
    } while (0)

static void print_sleeps(const char *path, hos_sleep_stats s) {
    if (s.count > 0) {
        printf("  %-16s %8" PRIu64 " sleeps, late %6" PRIu64 " ns mean, p99 <= %" PRIu64 " ns\n",
               path, s.count, s.late_sum_ns / s.count, s.late_p99_ns);
    }
}

int main(void) {
    hos_config *cfg;
    CHECK(hos_config_new(&cfg));
    CHECK(hos_config_read_env(cfg));
    hos_runtime *rt;
    CHECK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);

    struct shared s = {.rt = rt, .pending = 0, .sum = 0, .polls = 0};
    CHECK(hos_queue_create(JOBS_PER_FRAME, &s.jobs));
    CHECK(hos_event_create(1, &s.frame_done));

    uint32_t cores;
    CHECK(hos_runtime_cores(rt, &cores));
    uint64_t all = (1ull << cores) - 1;

    hos_handle threads[WORKERS + 1];
    hos_thread_params main_params = {
        .size = sizeof main_params, .name = "MainThread", .priority = 44,
        .ideal_core = 0, .core_mask = 0x1};
    CHECK(hos_thread_spawn(rt, &main_params, main_thread, &s, &threads[0]));
    for (int w = 0; w < WORKERS; w++) {
        char name[32];
        snprintf(name, sizeof name, "ModuleSystemWorker%d", w);
        hos_thread_params p = {
            .size = sizeof p, .name = name, .priority = 45, .ideal_core = -2,
            .core_mask = cores > 1 ? all & ~1ull : all}; /* every core but the MainThread's */
        CHECK(hos_thread_spawn(rt, &p, worker, &s, &threads[w + 1]));
    }
    for (int t = 0; t <= WORKERS; t++) {
        CHECK(hos_thread_join(threads[t], -1));
    }

    hos_stats st = {.size = sizeof st};
    CHECK(hos_stats_get(rt, &st));
    uint64_t jobs = (uint64_t)FRAMES * JOBS_PER_FRAME;
    uint64_t want = jobs * (jobs + 1) / 2;
    printf("%d frames, %" PRIu64 " jobs, sum %" PRIu64 " (want %" PRIu64 "), %" PRIu64 " empty polls\n",
           FRAMES, jobs, (uint64_t)atomic_load(&s.sum), want, (uint64_t)atomic_load(&s.polls));
    printf("calibration: timer %" PRIu64 " ns late, wake %" PRIu64 " ns\n", st.timer_lateness_ns,
           st.wake_latency_ns);
    print_sleeps("yield", st.sleep_yield);
    print_sleeps("timer", st.sleep_timer);
    print_sleeps("precise-own", st.sleep_precise_own);
    print_sleeps("precise-reactor", st.sleep_precise_reactor);
    print_sleeps("relaxed", st.sleep_relaxed);
    print_sleeps("idle-poll", st.sleep_idle_poll);
    printf("spins caught %" PRIu64 ", missed %" PRIu64 "; parks %" PRIu64 "; vcore waits %" PRIu64
           ", escapes %" PRIu64 "\n",
           st.spins_caught, st.spins_missed, st.parks, st.vcore_waits, st.vcore_escapes);
    printf("process CPU %.1f ms user, %.1f ms kernel\n", st.process_user_ns / 1e6,
           st.process_kernel_ns / 1e6);
    PRINT_TEXT(hos_critical_path_text(rt, buf, size, &len));

    for (int t = 0; t <= WORKERS; t++) {
        CHECK(hos_svc_close_handle(threads[t]));
    }
    CHECK(hos_svc_close_handle(s.jobs));
    CHECK(hos_svc_close_handle(s.frame_done));
    CHECK(hos_runtime_shutdown(rt, 1000000000));
    PRINT_TEXT(hos_runtime_shutdown_report_text(rt, buf, size, &len));
    putchar('\n');
    hos_runtime_free(rt);
    return atomic_load(&s.sum) == want ? 0 : 1;
}
