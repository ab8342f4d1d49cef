/*
 * What hos tells a C host that set no log sink: an HOS_TRACE file that cannot be written
 * fails hos_runtime_new with InvalidState and a last error naming the path; a config key
 * read from the environment that is no switch (HOS_FLIGH, given by capi/tests/c_hosts.rs)
 * and a boolean that is no boolean word are warned about on stderr, which c_hosts.rs reads;
 * HOS_LOG_STDERR=0 keeps stderr quiet; a log sink takes the warnings instead.
 * Exit status 0 when every check holds.
 */
#include "check.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

static atomic_int sunk;

static void sink(void *user, const hos_log_record *record) {
    (void)user;
    if (record->level == HOS_LOG_WARN && strstr(record->message, "HOS_FLIGHT=sunk") != NULL) {
        atomic_fetch_add(&sunk, 1);
    }
}

/* Builds a runtime from `cfg` and shuts it down. */
static void build(hos_config *cfg) {
    hos_runtime *rt = NULL;
    OK(hos_runtime_new(cfg, &rt));
    if (rt != NULL) {
        OK(hos_runtime_shutdown(rt, -1));
        hos_runtime_free(rt);
    }
}

int main(void) {
    hos_config *cfg;
    hos_runtime *rt = NULL;

    const char *missing = "/nonexistent-hos-folder/trace.json";
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_TRACE", missing));
    EXPECT(hos_runtime_new(cfg, &rt), HOS_RESULT_INVALID_STATE);
    TRUE(rt == NULL);
    TRUE(strstr(hos_last_error_message(), missing) != NULL);
    TRUE(strstr(hos_last_error_message(), "No such file") != NULL);
    hos_config_free(cfg);

    /* No sink: to stderr. */
    OK(hos_config_new(&cfg));
    OK(hos_config_read_env(cfg));
    OK(hos_config_set(cfg, "HOS_FLIGHT", "garbage"));
    build(cfg);
    hos_config_free(cfg);

    /* HOS_LOG_STDERR=0: nowhere, as asked. */
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_FLIGHT", "quiet"));
    OK(hos_config_set(cfg, "HOS_LOG_STDERR", "0"));
    build(cfg);
    hos_config_free(cfg);

    /* A sink takes them instead of stderr. */
    OK(hos_set_log_sink(sink, NULL));
    OK(hos_config_new(&cfg));
    OK(hos_config_set(cfg, "HOS_FLIGHT", "sunk"));
    build(cfg);
    hos_config_free(cfg);
    OK(hos_set_log_sink(NULL, NULL));
    TRUE(atomic_load(&sunk) == 1);

    return finish("every warning told");
}
