/*
 * The diagnostics from C: what each guest thread is doing, the wait tree (nodes and text),
 * frame marks and the critical path, the trace file, a flight dump on request, and the report
 * of a shutdown that left a thread behind; their bad inputs; and that a thread spawned,
 * joined (or waited for) and closed is no longer listed. Run by capi/tests/c_hosts.rs;
 * exit status 0 when every check holds.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, nanosleep */
#include "check.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void nothing(void *arg) { (void)arg; }

static void wait_event(void *arg) {
    hos_event_wait(*(hos_handle *)arg, -1); /* until signalled or the shutdown */
}

static void sleep_long(void *arg) {
    (void)arg;
    hos_svc_sleep_thread(10000000000LL); /* 10 s, ended by the shutdown */
}

/* Holds a mutex while it waits on an event, so a thread that locks the mutex waits for it. */
struct holder {
    hos_handle mutex, release, locked;
};

static void hold_mutex(void *arg) {
    struct holder *h = arg;
    hos_mutex_lock(h->mutex, -1);
    hos_event_signal(h->locked);
    hos_event_wait(h->release, -1);
    hos_mutex_unlock(h->mutex);
}

static void lock_mutex(void *arg) {
    struct holder *h = arg;
    if (hos_mutex_lock(h->mutex, -1) == HOS_RESULT_SUCCESS) {
        hos_mutex_unlock(h->mutex);
    }
}

/* Two threads that each hold one mutex and lock the other's: a deadlock the shutdown ends. */
struct crossed {
    hos_handle mine, theirs, locked, go;
};

static void lock_crossed(void *arg) {
    struct crossed *c = arg;
    hos_mutex_lock(c->mine, -1);
    hos_event_signal(c->locked);
    hos_event_wait(c->go, -1);
    hos_mutex_lock(c->theirs, -1); /* Cancelled by the shutdown; the first lock abandoned */
}

/* Guest code that never waits: a bounded shutdown leaves it behind. */
static atomic_int spinner_stop, spinner_left;
static void spin(void *arg) {
    (void)arg;
    while (!atomic_load(&spinner_stop)) {
    }
    atomic_store(&spinner_left, 1);
}

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static hos_handle spawn(hos_runtime *rt, const char *name, int32_t prio, hos_thread_entry f,
                        void *arg) {
    hos_thread_params p = {.size = sizeof p, .name = name, .priority = prio, .ideal_core = -2,
                           .core_mask = 0x3};
    hos_handle t = 0;
    OK(hos_thread_spawn(rt, &p, f, arg, &t));
    return t;
}

static uint64_t id_of(hos_handle t) {
    uint64_t id = 0;
    OK(hos_svc_get_thread_id(t, &id));
    return id;
}

static uint32_t listed(hos_runtime *rt) {
    uint32_t n = UINT32_MAX;
    OK(hos_stats_threads(rt, NULL, 0, &n));
    return n;
}

#define MAX_NODES 16

/* The wait tree's node of thread `id` (into *out), polled until `state` or 10 s. */
static int node_in(hos_runtime *rt, uint64_t id, uint32_t state, hos_wait_node *out) {
    for (int tries = 0; tries < 10000; tries++) {
        hos_wait_node nodes[MAX_NODES] = {{.size = sizeof(hos_wait_node)}};
        uint32_t n = 0;
        OK(hos_wait_tree(rt, nodes, MAX_NODES, &n));
        for (uint32_t i = 0; i < n && i < MAX_NODES; i++) {
            if (nodes[i].id == id && nodes[i].state == state) {
                *out = nodes[i];
                return 1;
            }
        }
        nap_ms(1);
    }
    fprintf(stderr, "thread %llu never reached state %u\n", (unsigned long long)id, state);
    return 0;
}

/* The text of a text call, in a malloc'd buffer sized by a length query first. */
#define TEXT(call_with_buf_size_len, out)                                                  \
    do {                                                                                   \
        size_t len_ = 0;                                                                   \
        char *buf = NULL;                                                                  \
        size_t size = 0, *len = &len_;                                                     \
        OK(call_with_buf_size_len);                                                        \
        size = len_ + 4096; /* room for a new snapshot's growth */                         \
        buf = malloc(size);                                                                \
        OK(call_with_buf_size_len);                                                        \
        TRUE(len_ < size && strlen(buf) == len_);                                          \
        (out) = buf;                                                                       \
    } while (0)

/* A thread spawned, joined (or waited for) and closed is not listed any more. */
static void threads_leave_the_list(hos_runtime *rt) {
    uint32_t before = listed(rt);
    hos_handle t = spawn(rt, "Quick", 44, nothing, NULL);
    OK(hos_thread_join(t, -1));
    TRUE(listed(rt) == before + 1); /* its handle still names it */
    OK(hos_svc_close_handle(t));
    TRUE(listed(rt) == before);

    /* Waited for through its handle, never joined: the close reaps it. */
    t = spawn(rt, "Quick", 44, nothing, NULL);
    int32_t index = -1;
    OK(hos_svc_wait_synchronization(&index, &t, 1, -1));
    TRUE(index == 0);
    OK(hos_svc_close_handle(t));
    TRUE(listed(rt) == before);

    uint32_t n = UINT32_MAX;
    OK(hos_wait_tree(rt, NULL, 0, &n));
    TRUE(n == before);
}

static void states_and_tree(hos_runtime *rt, hos_handle ev, uint64_t blocked, uint64_t sleeper,
                            struct holder *h, uint64_t holder, uint64_t waiter) {
    /* The tree, node by node. */
    hos_wait_node node;
    if (node_in(rt, blocked, HOS_WAIT_STATE_WAITING, &node)) {
        TRUE(strcmp((const char *)node.name, "Blocked") == 0);
        TRUE(node.priority == 40);
        TRUE(node.core == -1);
        TRUE(node.core_mask == 0x3);
        TRUE(node.lent_priority == -1);
        TRUE(node.deadlock == 0);
        TRUE(strstr((const char *)node.waits_on, "event") != NULL);
        TRUE(node.for_ns != UINT64_MAX);
    }
    if (node_in(rt, sleeper, HOS_WAIT_STATE_SLEEPING, &node)) {
        TRUE(node.sleep_ns == 10000000000ULL);
    }
    if (node_in(rt, waiter, HOS_WAIT_STATE_WAITING, &node)) {
        TRUE(node.holder_count >= 1 && node.holders[0] == holder);
        TRUE(strstr((const char *)node.waits_on, "mutex") != NULL);
    }

    /* Guest states: the blocked thread waits on its event. */
    hos_guest_state states[MAX_NODES] = {{.size = sizeof(hos_guest_state)}};
    uint32_t n = 0;
    OK(hos_guest_states(rt, states, MAX_NODES, &n));
    TRUE(n == 4);
    int seen = 0;
    for (uint32_t i = 0; i < n && i < MAX_NODES; i++) {
        if (states[i].id == blocked) {
            seen = 1;
            TRUE(states[i].doing == HOS_DOING_WAITING);
            TRUE(strcmp((const char *)states[i].name, "Blocked") == 0);
            TRUE(states[i].on[0] != 0);
        }
    }
    TRUE(seen);
    uint32_t some = 0;
    OK(hos_guest_states(rt, states, 1, &some)); /* a short array: the count says how many */
    TRUE(some == n);

    /* The tree as text: the waiter under its holder. */
    char *text;
    TEXT(hos_wait_tree_text(rt, buf, size, len), text);
    printf("%s", text);
    TRUE(strstr(text, "Blocked (priority 40, mask 0x3) waits on ") != NULL);
    TRUE(strstr(text, "sleeps 10000000 us") != NULL);
    TRUE(strstr(text, "Holder (priority 44, mask 0x3)") != NULL);
    TRUE(strstr(text, "\n\xe2\x94\x94 Waiter (priority 30") != NULL); /* "└ Waiter" */
    TRUE(strstr(text, "held by Holder") != NULL);
    free(text);

    /* snprintf's rules: cut to fit, NUL-terminated, the whole length said. */
    char small[8];
    size_t len = 0;
    memset(small, 'x', sizeof small);
    OK(hos_wait_tree_text(rt, small, sizeof small, &len));
    TRUE(len > sizeof small && strlen(small) == sizeof small - 1);
    TRUE(strncmp(small, "wait tr", 7) == 0);
    (void)ev;
    (void)h;
}

static void bad_inputs(hos_runtime *rt) {
    char buf[16];
    size_t len = 7;
    EXPECT(hos_wait_tree_text(NULL, buf, sizeof buf, &len), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_wait_tree_text(rt, buf, sizeof buf, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_wait_tree_text(rt, NULL, 5, &len), HOS_RESULT_INVALID_POINTER);
    TRUE(len == 7); /* a failed call wrote nothing */
    OK(hos_wait_tree_text(rt, NULL, 0, &len));
    TRUE(len > 0 && len != 7);

    uint32_t n = 99;
    hos_wait_node nodes[2] = {{.size = 3}};
    EXPECT(hos_wait_tree(NULL, nodes, 2, &n), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_wait_tree(rt, nodes, 2, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_wait_tree(rt, NULL, 2, &n), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_wait_tree(rt, nodes, 2, &n), HOS_RESULT_INVALID_SIZE);
    nodes[0].size = sizeof(hos_wait_node) + 4; /* not a multiple of the alignment */
    EXPECT(hos_wait_tree(rt, nodes, 1, &n), HOS_RESULT_INVALID_SIZE);
    _Alignas(8) unsigned char raw[sizeof(hos_wait_node) + 8];
    EXPECT(hos_wait_tree(rt, (hos_wait_node *)(raw + 4), 1, &n), HOS_RESULT_INVALID_POINTER);
    TRUE(n == 99);
    hos_guest_state st = {.size = 0};
    EXPECT(hos_guest_states(rt, &st, 1, &n), HOS_RESULT_INVALID_SIZE);
    EXPECT(hos_guest_states(rt, NULL, 0, NULL), HOS_RESULT_INVALID_POINTER);
    hos_frame_breakdown fb = {.size = 8};
    EXPECT(hos_critical_path(rt, &fb, 1, &n), HOS_RESULT_INVALID_SIZE);
    EXPECT(hos_critical_path_text(rt, NULL, 1, &len), HOS_RESULT_INVALID_POINTER);

    EXPECT(hos_frame_mark(NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_write_trace(NULL, "x.json"), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_write_trace(rt, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_write_trace(rt, "trace-\xff.json"), HOS_RESULT_INVALID_UTF8);
    EXPECT(hos_write_trace(rt, "/nonexistent-hos-dir/trace.json"), HOS_RESULT_IO_ERROR);
    TRUE(strstr(hos_last_error_message(), "/nonexistent-hos-dir/trace.json") != NULL);
    TRUE(strcmp(hos_result_name(HOS_RESULT_IO_ERROR), "IoError") == 0);
    EXPECT(hos_dump_flight(rt, "r", buf, sizeof buf, NULL), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_dump_flight(rt, "r", NULL, 4, &len), HOS_RESULT_INVALID_POINTER);
    EXPECT(hos_dump_flight(rt, "\xff", buf, sizeof buf, &len), HOS_RESULT_INVALID_UTF8);
    EXPECT(hos_dump_flight(NULL, "r", buf, sizeof buf, &len), HOS_RESULT_INVALID_POINTER);

    hos_shutdown_report r = {.size = sizeof r};
    EXPECT(hos_runtime_shutdown_report(rt, &r), HOS_RESULT_INVALID_STATE); /* not yet */
    EXPECT(hos_runtime_shutdown_report_text(rt, NULL, 0, &len), HOS_RESULT_INVALID_STATE);
    EXPECT(hos_runtime_shutdown_stragglers(rt, NULL, 0, &n), HOS_RESULT_INVALID_STATE);
    EXPECT(hos_runtime_shutdown_report(NULL, &r), HOS_RESULT_INVALID_POINTER);
}

/* A deadlock: each node in the cycle says so, and the text names it. */
static void deadlock(hos_runtime *rt, struct crossed c[2], hos_handle t[2]) {
    OK(hos_mutex_create(0, &c[0].mine));
    OK(hos_mutex_create(0, &c[1].mine));
    OK(hos_event_create(0, &c[0].go));
    c[1].go = c[0].go;
    c[0].theirs = c[1].mine;
    c[1].theirs = c[0].mine;
    const char *names[2] = {"CrossedA", "CrossedB"};
    for (int i = 0; i < 2; i++) {
        OK(hos_event_create(0, &c[i].locked));
        t[i] = spawn(rt, names[i], 44, lock_crossed, &c[i]);
        OK(hos_event_wait(c[i].locked, -1));
    }
    OK(hos_event_signal(c[0].go)); /* manual-clear: both go */
    hos_wait_node node = {.size = 0};
    for (int i = 0; i < 2; i++) {
        /* Polled until its lock wait shows with both holders known. */
        for (int tries = 0; tries < 100 && node_in(rt, id_of(t[i]), HOS_WAIT_STATE_WAITING,
                                                   &node) && !node.deadlock;
             tries++) {
            nap_ms(10);
        }
        TRUE(node.deadlock == 1);
        TRUE(node.holder_count == 1 && node.holders[0] == id_of(t[1 - i]));
    }
    char *text;
    TEXT(hos_wait_tree_text(rt, buf, size, len), text);
    printf("%s", text);
    TRUE(strstr(text, "deadlock: cycle Crossed") != NULL);
    free(text);
}

/* Whether the file at `path` starts (after white space) with `{` or `[`, and ends with the
 * matching bracket: a JSON object or array. */
static int is_json(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: not there\n", path);
        return 0;
    }
    int first = ' ', last = ' ', c;
    while ((c = fgetc(f)) != EOF) {
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
            if (first == ' ') {
                first = c;
            }
            last = c;
        }
    }
    fclose(f);
    return (first == '{' && last == '}') || (first == '[' && last == ']');
}

static void frames_and_files(hos_runtime *rt, const char *dir) {
    for (int i = 0; i < 4; i++) {
        OK(hos_frame_mark(rt));
        OK(hos_host_sleep(rt, 2000000)); /* the frame's pacing */
    }
    OK(hos_frame_mark(rt));
    hos_frame_breakdown frames[8] = {{.size = sizeof(hos_frame_breakdown)}};
    uint32_t n = 0;
    OK(hos_critical_path(rt, frames, 8, &n));
    TRUE(n == 4);
    for (uint32_t i = 0; i < n && i < 8; i++) {
        hos_frame_breakdown *b = &frames[i];
        TRUE(b->frame_ns >= 2000000);
        TRUE(b->guest_ns + b->vcore_wait_ns + b->object_wait_ns + b->sleep_ns +
                 b->sleep_late_ns + b->host_ns ==
             b->frame_ns);
        TRUE(b->sleep_ns >= 1000000); /* the host sleep on the marking thread */
    }
    char *text;
    TEXT(hos_critical_path_text(rt, buf, size, len), text);
    printf("%s", text);
    TRUE(strstr(text, "critical path of 4 frames") != NULL);
    TRUE(strstr(text, "frame 4: ") != NULL);
    free(text);

    char path[4096];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    OK(hos_write_trace(rt, path));
    TRUE(is_json(path));

    char dumped[4096];
    size_t len = 0;
    OK(hos_dump_flight(rt, "asked by the diagnostics test", dumped, sizeof dumped, &len));
    TRUE(len < sizeof dumped && strlen(dumped) == len);
    TRUE(strncmp(dumped, dir, strlen(dir)) == 0);
    TRUE(is_json(dumped));
    remove(dumped);
    OK(hos_dump_flight(rt, NULL, NULL, 0, &len)); /* a second dump, its path's length only */
    TRUE(len > strlen(dir));
    remove(path);
}

static void shutdown_report(hos_runtime *rt, hos_handle spinner) {
    /* Every guest thread but the spinner is in a wait the shutdown ends. */
    EXPECT(hos_runtime_shutdown(rt, 50000000), HOS_RESULT_TIMED_OUT);
    TRUE(strstr(hos_last_error_message(), "Spinner") != NULL);
    hos_shutdown_report r = {.size = 4};
    EXPECT(hos_runtime_shutdown_report(rt, &r), HOS_RESULT_INVALID_SIZE);
    EXPECT(hos_runtime_shutdown_report(rt, NULL), HOS_RESULT_INVALID_POINTER);
    r.size = sizeof r;
    OK(hos_runtime_shutdown_report(rt, &r));
    TRUE(r.stragglers == 1);
    TRUE(r.joined == 6); /* Blocked, Sleeper, Holder, Waiter, CrossedA and B */
    TRUE(r.elapsed_ns >= 50000000);
    hos_guest_state left[2] = {{.size = sizeof(hos_guest_state)}};
    uint32_t n = 0;
    OK(hos_runtime_shutdown_stragglers(rt, left, 2, &n));
    TRUE(n == 1);
    TRUE(strcmp((const char *)left[0].name, "Spinner") == 0);
    TRUE(left[0].doing == HOS_DOING_GUEST_CODE);
    TRUE(left[0].id == id_of(spinner));
    char *text;
    TEXT(hos_runtime_shutdown_report_text(rt, buf, size, len), text);
    printf("%s\n", text);
    TRUE(strstr(text, "6 guest threads joined, 1 did not leave") != NULL);
    TRUE(strstr(text, "\"Spinner\"") != NULL);
    TRUE(strstr(text, "running guest code") != NULL);
    free(text);

    atomic_store(&spinner_stop, 1); /* the detached spinner ends by itself */
    while (!atomic_load(&spinner_left)) {
        nap_ms(1);
    }
    OK(hos_runtime_shutdown(rt, -1)); /* again: nothing left to wait for */
    OK(hos_runtime_shutdown_report(rt, &r));
    TRUE(r.stragglers == 0 && r.joined == 0);
}

/* The bound the virtual cores keep, as the stats say it: `grace` for HOS_VCORE_GRACE_US (NULL:
 * the default), `vcores` for HOS_VCORES. */
static void bound_is(const char *vcores, const char *grace, uint32_t bound, uint64_t grace_ns) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "2"));
    OK(hos_config_set(cfg, "HOS_VCORES", vcores));
    if (grace != NULL) {
        OK(hos_config_set(cfg, "HOS_VCORE_GRACE_US", grace));
    }
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    hos_stats s = {.size = sizeof s};
    OK(hos_stats_get(rt, &s));
    TRUE(s.vcore_bound == bound);
    TRUE(s.vcore_grace_ns == grace_ns);
    TRUE(s.vcore_revokes == 0);
    OK(hos_runtime_shutdown(rt, 1000000000));
    hos_runtime_free(rt);
}

/* A pinned calibration (hos_config_calibration) is what the stats read, never updated; a
 * bad one is refused naming its field; NULL measures again. */
static void calibration_pins(void) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "2"));
    hos_calibration cal = {.size = sizeof cal, .precise_reactor = 1,
                           .timer_lateness_ns = 12345, .wake_latency_ns = 23456};
    OK(hos_config_calibration(cfg, &cal));
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_stats s = {.size = sizeof s};
    OK(hos_stats_get(rt, &s));
    TRUE(s.timer_lateness_ns == 12345 && s.timer_margin_ns == 12345);
    TRUE(s.poller_margin_ns == 12345 && s.wake_latency_ns == 23456 && s.precise_reactor == 1);
    OK(hos_runtime_shutdown(rt, 1000000000));
    hos_runtime_free(rt);

    cal.precise_reactor = 2;
    EXPECT(hos_config_calibration(cfg, &cal), HOS_RESULT_INVALID_VALUE);
    TRUE(strstr(hos_last_error_message(), "precise_reactor is 2") != NULL);
    cal.precise_reactor = 0;
    cal.wake_latency_ns = 2000001;
    OK(hos_config_calibration(cfg, &cal));
    hos_runtime *refused = NULL;
    EXPECT(hos_runtime_new(cfg, &refused), HOS_RESULT_INVALID_VALUE);
    TRUE(refused == NULL);
    TRUE(strstr(hos_last_error_message(), "calibration.wake_latency_ns") != NULL);
    cal.size = 4;
    EXPECT(hos_config_calibration(cfg, &cal), HOS_RESULT_INVALID_SIZE);
    EXPECT(hos_config_calibration(NULL, &cal), HOS_RESULT_INVALID_POINTER);
    OK(hos_config_calibration(cfg, NULL)); /* measured at build again */
    OK(hos_runtime_new(cfg, &rt));
    OK(hos_runtime_shutdown(rt, 1000000000));
    hos_runtime_free(rt);
    hos_config_free(cfg);
}

int main(void) {
    TRUE(hos_abi_version() == HOS_ABI_VERSION); /* the library is the header's */
    bound_is("1", NULL, 1, 0);      /* the default: strict */
    bound_is("1", "0", 1, 0);       /* strict, asked */
    bound_is("1", "100", 2, 100000); /* relaxed after a 100 us grace */
    bound_is("1", "250", 2, 250000);
    bound_is("0", "250", 0, 0); /* no virtual cores, no bound */
    calibration_pins();
    char dir[] = "/tmp/hos-diagnostics-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    char trace[4096];
    snprintf(trace, sizeof trace, "%s/end.json", dir);
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_CORES", "2"));
    OK(hos_config_set(cfg, "HOS_TRACE", trace));
    OK(hos_config_set(cfg, "HOS_FLIGHT_DIR", dir));
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);

    threads_leave_the_list(rt);
    bad_inputs(rt);

    hos_handle ev;
    struct holder h;
    OK(hos_event_create(0, &ev));
    OK(hos_mutex_create(0, &h.mutex));
    OK(hos_event_create(0, &h.release));
    OK(hos_event_create(0, &h.locked));
    hos_handle blocked = spawn(rt, "Blocked", 40, wait_event, &ev);
    hos_handle sleeper = spawn(rt, "Sleeper", 44, sleep_long, NULL);
    hos_handle holder = spawn(rt, "Holder", 44, hold_mutex, &h);
    OK(hos_event_wait(h.locked, -1));
    hos_handle waiter = spawn(rt, "Waiter", 30, lock_mutex, &h);
    states_and_tree(rt, ev, id_of(blocked), id_of(sleeper), &h, id_of(holder), id_of(waiter));
    frames_and_files(rt, dir);
    struct crossed crossed[2];
    hos_handle crossers[2];
    deadlock(rt, crossed, crossers);

    hos_handle spinner = spawn(rt, "Spinner", 44, spin, NULL);
    shutdown_report(rt, spinner);
    TRUE(is_json(trace)); /* HOS_TRACE's file, written by the shutdown */
    hos_runtime_free(rt);
    remove(trace);

    hos_handle all[] = {ev,          h.mutex,     h.release,         h.locked,
                        blocked,     sleeper,     holder,            waiter,
                        spinner,     crossers[0], crossers[1],       crossed[0].mine,
                        crossed[1].mine, crossed[0].go, crossed[0].locked, crossed[1].locked};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        OK(hos_svc_close_handle(all[i]));
    }
    return finish("the diagnostics checked");
}
