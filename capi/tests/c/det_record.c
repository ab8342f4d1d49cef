/*
 * Host events, recording, replay and verify in the deterministic mode from C: a guest pump
 * takes the host's posts (vsyncs at virtual times, inputs posted on wall time) with
 * hos_det_next_post; the run recorded through HOS_DET_RECORD replays (HOS_DET=replay:PATH)
 * with the same figures, the same posts seen and no divergence, while the host's own posts
 * are refused; a replay of another program reports its divergence; another quantum is
 * refused naming the field and both values; hos_det_verify agrees on the program. Run by capi/tests/c_hosts.rs.
 */
#include "check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { VSYNC = 1, INPUT = 2, QUIT = 3, FRAMES = 10, INPUTS = 5, MAX_POSTS = 64 };
static const uint64_t FRAME_NS = 16666667;

/* What the pump saw: source, sequence, virtual time and the first payload byte of each. */
typedef struct {
    uint64_t n;
    uint64_t seen[MAX_POSTS][4];
    hos_handle done;
} pump_log;

static void pump(void *arg) {
    pump_log *log = arg;
    hos_runtime *rt = (hos_runtime *)(uintptr_t)log->seen[MAX_POSTS - 1][0];
    for (;;) {
        hos_det_posted p = {.size = sizeof p};
        uint8_t buf[4] = {0};
        OK(hos_det_next_post(rt, -1, &p, buf, sizeof buf));
        if (log->n < MAX_POSTS - 1) {
            uint64_t *s = log->seen[log->n++];
            s[0] = p.source, s[1] = p.seq, s[2] = p.vt_ns, s[3] = buf[0];
        }
        if (p.source == QUIT) {
            break;
        }
    }
    OK(hos_event_signal(log->done));
}

static hos_config *config(const char *det, const char *record, const char *quantum) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_DET", det));
    OK(hos_config_set(cfg, "HOS_DET_PACE", "free"));
    OK(hos_config_set(cfg, "HOS_DET_QUANTUM", quantum));
    if (record) {
        OK(hos_config_set(cfg, "HOS_DET_RECORD", record));
    }
    return cfg;
}

/* One run: the pump as the main guest thread; `live` posts from this host thread. */
static hos_det_stats run(hos_runtime *rt, int live, pump_log *log) {
    memset(log, 0, sizeof *log);
    log->seen[MAX_POSTS - 1][0] = (uint64_t)(uintptr_t)rt;
    OK(hos_event_create(0, &log->done));
    if (live) {
        for (uint64_t f = 0; f < FRAMES; f++) {
            uint8_t b = (uint8_t)f;
            OK(hos_det_post_at(rt, VSYNC, f * FRAME_NS, &b, 1, NULL));
        }
    }
    hos_handle main;
    OK(hos_thread_spawn(rt, NULL, pump, log, &main));
    for (int i = 0; i < INPUTS; i++) {
        uint8_t b = (uint8_t)(0xA0 + i);
        hos_host_sleep(rt, 200000);
        if (live) {
            uint64_t seq = 99;
            OK(hos_det_post(rt, INPUT, &b, 1, &seq));
            TRUE(seq == (uint64_t)i);
        } else {
            EXPECT(hos_det_post(rt, INPUT, &b, 1, NULL), HOS_RESULT_INVALID_STATE);
            TRUE(strstr(hos_last_error_message(), "replays a recording") != NULL);
        }
    }
    if (live) {
        /* After the last vsync: the inputs, posted before it at earlier times, all precede it. */
        OK(hos_det_post_at(rt, QUIT, FRAMES * FRAME_NS, NULL, 0, NULL));
    }
    OK(hos_event_wait(log->done, -1));
    OK(hos_thread_join(main, -1));
    OK(hos_svc_close_handle(main));
    OK(hos_svc_close_handle(log->done));
    hos_det_stats s = {.size = sizeof s};
    OK(hos_det_stats_get(rt, &s));
    OK(hos_runtime_shutdown(rt, -1));
    return s;
}

/* verify's program: a guest that sleeps through three frames. */
static void sleeper(void *arg) {
    (void)arg;
    for (int i = 0; i < 3; i++) {
        hos_svc_sleep_thread((int64_t)FRAME_NS);
    }
}

static void program(hos_runtime *rt, void *arg) {
    (void)arg;
    hos_handle t;
    OK(hos_thread_spawn(rt, NULL, sleeper, NULL, &t));
    OK(hos_thread_join(t, -1));
    OK(hos_svc_close_handle(t));
}

int main(void) {
    char path[128], det[160];
    snprintf(path, sizeof path, "/tmp/hos-det-record-%d.hosrec", (int)getpid());
    snprintf(det, sizeof det, "replay:%s", path);

    /* Outside the mode: refused, naming why; a bad pointer is a code. */
    hos_runtime *off;
    OK(hos_runtime_new(NULL, &off));
    EXPECT(hos_det_post(off, 1, NULL, 0, NULL), HOS_RESULT_INVALID_STATE);
    TRUE(strstr(hos_last_error_message(), "HOS_DET is off") != NULL);
    EXPECT(hos_det_post(off, 1, NULL, 3, NULL), HOS_RESULT_INVALID_POINTER);
    hos_det_divergence none = {.size = sizeof none};
    OK(hos_det_divergence_get(off, &none));
    TRUE(none.diverged == 0);
    OK(hos_runtime_shutdown(off, -1));
    hos_runtime_free(off);

    /* Record. */
    static pump_log rec, rep;
    hos_config *cfg = config("stable", path, "5");
    hos_runtime *rt;
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    hos_det_posted p = {.size = sizeof p};
    EXPECT(hos_det_next_post(rt, 0, &p, NULL, 0), HOS_RESULT_INVALID_STATE);
    TRUE(strstr(hos_last_error_message(), "not a host thread") != NULL);
    hos_det_stats a = run(rt, 1, &rec);
    hos_runtime_free(rt);
    TRUE(rec.n == FRAMES + INPUTS + 1);

    /* Replay: the same run, no divergence. */
    cfg = config(det, NULL, "5");
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    hos_det_stats b = run(rt, 0, &rep);
    hos_det_divergence d = {.size = sizeof d};
    OK(hos_det_divergence_get(rt, &d));
    char text[512];
    size_t len = 99;
    OK(hos_det_divergence_text(rt, text, sizeof text, &len));
    hos_runtime_free(rt);
    TRUE(d.diverged == 0 && len == 0);
    TRUE(a.decisions == b.decisions && a.hash == b.hash && a.vt_ns == b.vt_ns);
    TRUE(rep.n == rec.n && memcmp(rep.seen, rec.seen, sizeof rec.seen[0] * rec.n) == 0);

    /* A replay of another program diverges, and says where (read after the shutdown). */
    cfg = config(det, NULL, "5");
    OK(hos_runtime_new(cfg, &rt));
    hos_config_free(cfg);
    program(rt, NULL);
    OK(hos_runtime_shutdown(rt, -1));
    OK(hos_det_divergence_get(rt, &d));
    OK(hos_det_divergence_text(rt, text, sizeof text, &len));
    hos_runtime_free(rt);
    TRUE(d.diverged == 1 && d.decision < a.decisions);
    TRUE(len > 0 && strncmp(text, "diverged at decision", 20) == 0);

    /* Another quantum: named, with both values. */
    cfg = config(det, NULL, "7");
    EXPECT(hos_runtime_new(cfg, &rt), HOS_RESULT_INVALID_STATE);
    TRUE(strstr(hos_last_error_message(), "quantum recorded 5, live 7") != NULL);
    hos_config_free(cfg);
    unlink(path);

    /* verify: the program twice, witness by witness. */
    cfg = config("random:7", NULL, "5");
    hos_det_verify_report v = {.size = sizeof v};
    len = 99;
    OK(hos_det_verify(cfg, program, NULL, &v, text, sizeof text, &len));
    TRUE(v.diverged == 0 && len == 0);
    if (v.diverged) {
        fprintf(stderr, "verify: %s\n", text);
    }
    TRUE(v.decisions[0] == v.decisions[1] && v.decisions[0] > 3 && v.hash[0] == v.hash[1]);
    EXPECT(hos_det_verify(cfg, NULL, NULL, &v, text, sizeof text, &len),
           HOS_RESULT_INVALID_POINTER);
    hos_config_free(cfg);
    return finish("deterministic record and replay checked");
}
