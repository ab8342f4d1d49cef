/*
 * What a deterministic recording's header pins, from C: HOS_DET_BUILD_ID (the host's build
 * id) is folded into the build hash, so a replay on another build is refused (InvalidState)
 * naming both ids; the guest's entropy, read with hos_svc_get_info(
 * HOS_INFO_TYPE_RANDOM_ENTROPY), is drawn from the recorded seed: the same words for one
 * seed, others for another, the recorded ones in a replay; the kernel's checks on the call.
 * Run by capi/tests/c_hosts.rs.
 */
#include "check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static uint64_t words[4];

static void reader(void *arg) {
    (void)arg;
    hos_svc_sleep_thread(1000);
    for (uint64_t i = 0; i < 4; i++) {
        OK(hos_svc_get_info(HOS_INFO_TYPE_RANDOM_ENTROPY, 0, i, &words[i]));
    }
    uint64_t w;
    EXPECT(hos_svc_get_info(HOS_INFO_TYPE_RANDOM_ENTROPY, HOS_CURRENT_THREAD, 0, &w),
           HOS_RESULT_INVALID_HANDLE);
    EXPECT(hos_svc_get_info(HOS_INFO_TYPE_RANDOM_ENTROPY, 0, 4, &w),
           HOS_RESULT_INVALID_COMBINATION);
}

static hos_config *config(const char *det, const char *build_id, const char *record) {
    hos_config *cfg;
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_DET", det));
    OK(hos_config_set(cfg, "HOS_DET_PACE", "free"));
    if (build_id) OK(hos_config_set(cfg, "HOS_DET_BUILD_ID", build_id));
    if (record) OK(hos_config_set(cfg, "HOS_DET_RECORD", record));
    return cfg;
}

/* Runs the reader as the main guest thread of a runtime built from `cfg` (freed); the
 * status of the build, and the words read into `out` if it built. */
static hos_result run(hos_config *cfg, uint64_t out[4]) {
    hos_runtime *rt;
    hos_result r = hos_runtime_new(cfg, &rt);
    hos_config_free(cfg);
    if (r != HOS_RESULT_SUCCESS) return r;
    hos_handle main;
    OK(hos_thread_spawn(rt, NULL, reader, NULL, &main));
    OK(hos_thread_join(main, -1));
    OK(hos_svc_close_handle(main));
    OK(hos_runtime_shutdown(rt, -1));
    hos_det_divergence d = {.size = sizeof d};
    OK(hos_det_divergence_get(rt, &d));
    TRUE(d.diverged == 0);
    hos_runtime_free(rt);
    memcpy(out, words, sizeof words);
    return r;
}

int main(void) {
    char path[64], replay[80];
    snprintf(path, sizeof path, "/tmp/hos-det-build-%d.hosrec", (int)getpid());
    snprintf(replay, sizeof replay, "replay:%s", path);
    uint64_t recorded[4], again[4], other[4], replayed[4];
    OK(run(config("random:9", "Game 1.0.0", path), recorded));
    OK(run(config("chaos:9", NULL, NULL), again));
    TRUE(memcmp(recorded, again, sizeof again) == 0); /* one seed, one set of words */
    OK(run(config("random:10", NULL, NULL), other));
    TRUE(memcmp(recorded, other, sizeof other) != 0);

    EXPECT(run(config(replay, "Game 1.0.1", NULL), replayed), HOS_RESULT_INVALID_STATE);
    const char *msg = hos_last_error_message();
    TRUE(strstr(msg, "\"Game 1.0.0\"") != NULL && strstr(msg, "\"Game 1.0.1\"") != NULL);
    EXPECT(run(config(replay, NULL, NULL), replayed), HOS_RESULT_INVALID_STATE);
    TRUE(strstr(hos_last_error_message(), "host build id none") != NULL);
    OK(run(config(replay, "Game 1.0.0", NULL), replayed));
    TRUE(memcmp(recorded, replayed, sizeof replayed) == 0);
    unlink(path);
    return finish("deterministic build id and entropy checked");
}
