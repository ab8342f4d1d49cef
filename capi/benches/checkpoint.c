/*
 * The static-library side of capi/benches/abi.rs: an attached guest thread that times, on
 * request, n calls of hos_checkpoint (mode 0) or n inline tests of its kick flag (mode 1), as
 * C code linked against libhos.a runs them. Reads "mode n" lines on stdin, answers the
 * nanoseconds taken on stdout, until end of input.
 */
#include <hos.h>

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(void) {
    hos_runtime *rt;
    hos_handle self;
    if (hos_runtime_new(NULL, &rt) != 0 || hos_thread_attach(rt, NULL, &self) != 0) {
        fprintf(stderr, "boot: %s\n", hos_last_error_message());
        return 1;
    }
    const volatile uint32_t *kick = hos_thread_kick_flag();
    int mode;
    uint64_t n;
    while (scanf("%d %" SCNu64, &mode, &n) == 2) {
        uint64_t t0 = now_ns();
        if (mode == 0) {
            for (uint64_t i = 0; i < n; i++) {
                hos_checkpoint();
            }
        } else {
            for (uint64_t i = 0; i < n; i++) {
                if (*kick) {
                    hos_checkpoint();
                }
            }
        }
        printf("%" PRIu64 "\n", now_ns() - t0);
        fflush(stdout);
    }
    hos_thread_detach();
    hos_runtime_shutdown(rt, -1);
    hos_runtime_free(rt);
    return 0;
}
