// hos.hpp: C++17 RAII wrappers over hos.h (header-only, written by hand).
//
// hos::Config, hos::Runtime (with the diagnostics: the wait tree, guest states, the trace,
// frame marks, flight dumps, the critical path, the shutdown's report), hos::Thread,
// hos::AttachedThread, hos::Event, hos::KernelEvent, hos::Queue and hos::Mutex own what they
// make: a runtime is freed, a config freed, a handle closed and an attached thread detached
// when the wrapper goes out of scope. Constructors throw hos::Error when the call fails
// (std::abort() when exceptions are off); waits and sends return the hos_result, since
// TimedOut and Cancelled are outcomes a host handles, not errors. The svcs on guest words
// (hos_svc_arbitrate_lock, ...) have no wrapper: the SDK's code that calls them owns its
// words. A hos::Thread runs any callable; an exception that leaves it calls std::terminate()
// (it must not unwind into hos).
#ifndef HOS_HPP
#define HOS_HPP

#include "hos.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace hos {

// A call that failed: its code, with its name and detail as the message.
class Error : public std::runtime_error {
public:
    explicit Error(hos_result code)
        : std::runtime_error(std::string(hos_result_name(code)) + ": " + hos_last_error_message()),
          code_(code) {}
    hos_result code() const noexcept { return code_; }

private:
    hos_result code_;
};

namespace detail {
inline void check(hos_result r) {
    if (r != HOS_RESULT_SUCCESS) {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
        throw Error(r);
#else
        std::abort();
#endif
    }
}
// The whole text of a call with snprintf's rules (buf, size, len): a length query, then the
// read, again if the text grew in between (a new snapshot).
template <class Call>
std::string text(Call call) {
    size_t len = 0;
    check(call(nullptr, 0, &len));
    std::string s;
    do {
        s.resize(len + 1);
        check(call(&s[0], s.size(), &len));
    } while (len >= s.size());
    s.resize(len);
    return s;
}

// Every element of a call that fills an array of size-prefixed structs (out, capacity,
// count), again with a larger array if the count grew in between.
template <class T, class Call>
std::vector<T> array(Call call) {
    uint32_t n = 0;
    check(call(nullptr, 0, &n));
    std::vector<T> v;
    do {
        v.assign(n > 0 ? n : 1, T{});
        v[0].size = sizeof(T);
        check(call(v.data(), static_cast<uint32_t>(v.size()), &n));
    } while (n > v.size());
    v.resize(n);
    return v;
}
}  // namespace detail

// A set of switches by their environment names ("HOS_CORES").
class Config {
public:
    Config() { detail::check(hos_config_new(&p_)); }
    ~Config() { hos_config_free(p_); }
    Config(const Config&) = delete;
    Config& operator=(const Config&) = delete;

    // Sets a switch; throws for a key that is no switch or a value it refuses.
    Config& set(const char* key, const char* value) {
        detail::check(hos_config_set(p_, key, value));
        return *this;
    }
    // Reads every HOS_* variable of the process environment.
    Config& read_env() {
        detail::check(hos_config_read_env(p_));
        return *this;
    }
    const hos_config* get() const noexcept { return p_; }

private:
    hos_config* p_ = nullptr;
};

// A running runtime; freed (after a shutdown that waits for no thread, if none was made) when
// it goes out of scope. Call shutdown() first to wait for guest threads.
class Runtime {
public:
    Runtime() { detail::check(hos_runtime_new(nullptr, &p_)); }
    explicit Runtime(const Config& cfg) { detail::check(hos_runtime_new(cfg.get(), &p_)); }
    ~Runtime() { hos_runtime_free(p_); }
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // Success, or TimedOut when guest threads did not leave within timeout_ns (-1: no limit).
    hos_result shutdown(int64_t timeout_ns = -1) noexcept { return hos_runtime_shutdown(p_, timeout_ns); }
    void host_sleep(int64_t ns) { detail::check(hos_host_sleep(p_, ns)); }
    hos_stats stats() const {
        hos_stats s{};
        s.size = sizeof s;
        detail::check(hos_stats_get(p_, &s));
        return s;
    }
    uint32_t cores() const {
        uint32_t n = 0;
        detail::check(hos_runtime_cores(p_, &n));
        return n;
    }

    // The diagnostics (docs in hos.h). What each live guest thread is doing now.
    std::vector<hos_guest_state> guest_states() const {
        return detail::array<hos_guest_state>(
            [this](hos_guest_state* o, uint32_t c, uint32_t* n) { return hos_guest_states(p_, o, c, n); });
    }
    // The wait tree now, a node per guest thread.
    std::vector<hos_wait_node> wait_tree() const {
        return detail::array<hos_wait_node>(
            [this](hos_wait_node* o, uint32_t c, uint32_t* n) { return hos_wait_tree(p_, o, c, n); });
    }
    // The wait tree now as text: each thread under the one that holds what it waits for.
    std::string wait_tree_text() const {
        return detail::text([this](char* b, size_t s, size_t* l) { return hos_wait_tree_text(p_, b, s, l); });
    }
    // Marks a host frame (at each present).
    void frame_mark() { detail::check(hos_frame_mark(p_)); }
    // Writes the trace as Chrome trace-event JSON; throws IoError if the file is not written.
    void write_trace(const std::string& path) const { detail::check(hos_write_trace(p_, path.c_str())); }
    // Dumps the flight recorder now; gives the file's path. Throws InvalidState if no dump was
    // written (the recorder off, 8 dumps made already).
    std::string dump_flight(const std::string& reason) const {
        std::string path(4096, '\0');
        size_t len = 0;
        detail::check(hos_dump_flight(p_, reason.c_str(), &path[0], path.size(), &len));
        path.resize(len < path.size() ? len : path.size() - 1);
        return path;
    }
    // Each frame's critical path (a full trace, HOS_TRACE, and two frame marks or more).
    std::vector<hos_frame_breakdown> critical_path() const {
        return detail::array<hos_frame_breakdown>(
            [this](hos_frame_breakdown* o, uint32_t c, uint32_t* n) { return hos_critical_path(p_, o, c, n); });
    }
    std::string critical_path_text() const {
        return detail::text([this](char* b, size_t s, size_t* l) { return hos_critical_path_text(p_, b, s, l); });
    }
    // What the last shutdown did; throws InvalidState before the first.
    hos_shutdown_report shutdown_report() const {
        hos_shutdown_report r{};
        r.size = sizeof r;
        detail::check(hos_runtime_shutdown_report(p_, &r));
        return r;
    }
    // The guest threads the last shutdown left behind, with what each was doing.
    std::vector<hos_guest_state> shutdown_stragglers() const {
        return detail::array<hos_guest_state>([this](hos_guest_state* o, uint32_t c, uint32_t* n) {
            return hos_runtime_shutdown_stragglers(p_, o, c, n);
        });
    }
    std::string shutdown_report_text() const {
        return detail::text(
            [this](char* b, size_t s, size_t* l) { return hos_runtime_shutdown_report_text(p_, b, s, l); });
    }
    hos_runtime* get() const noexcept { return p_; }

private:
    hos_runtime* p_ = nullptr;
};

// A handle, closed when it goes out of scope; movable, not copyable.
class Handle {
public:
    Handle() = default;
    explicit Handle(hos_handle h) noexcept : h_(h) {}
    ~Handle() { reset(); }
    Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, 0)) {}
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, 0);
        }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    hos_handle get() const noexcept { return h_; }
    void reset() noexcept {
        if (h_ != 0) {
            hos_svc_close_handle(h_);
            h_ = 0;
        }
    }

protected:
    hos_handle h_ = 0;
};

// What a guest thread is made with; a core_mask of 0 means every core of the runtime.
struct ThreadParams {
    std::string name = "GuestThread";
    int32_t priority = 44;
    int32_t ideal_core = -2;
    uint64_t core_mask = 0;
};

// A guest thread running a callable. Destroying it closes its handle; the thread runs on
// until it returns (the runtime's shutdown joins it): call join() to wait for it.
class Thread : public Handle {
public:
    template <class F>
    Thread(Runtime& rt, const ThreadParams& p, F&& f) {
        using Fn = std::decay_t<F>;
        auto fn = std::make_unique<Fn>(std::forward<F>(f));
        hos_thread_params params{};
        params.size = sizeof params;
        params.name = p.name.c_str();
        params.priority = p.priority;
        params.ideal_core = p.ideal_core;
        params.core_mask = p.core_mask != 0 ? p.core_mask : (uint64_t{1} << rt.cores()) - 1;
        detail::check(hos_thread_spawn(rt.get(), &params, &run<Fn>, fn.get(), &h_));
        fn.release();  // the thread owns it now; a failed spawn never calls run
    }
    // Success once the thread returned; TimedOut; Cancelled.
    hos_result join(int64_t timeout_ns = -1) noexcept { return hos_thread_join(h_, timeout_ns); }

private:
    template <class Fn>
    static void run(void* arg) noexcept {
        std::unique_ptr<Fn> f(static_cast<Fn*>(arg));
        (*f)();
    }
};

// The calling OS thread as a guest thread of a runtime (hos_thread_attach) until this goes out
// of scope (hos_thread_detach). Made and destroyed on the same thread.
class AttachedThread : public Handle {
public:
    AttachedThread(Runtime& rt, const ThreadParams& p) {
        hos_thread_params params{};
        params.size = sizeof params;
        params.name = p.name.c_str();
        params.priority = p.priority;
        params.ideal_core = p.ideal_core;
        params.core_mask = p.core_mask != 0 ? p.core_mask : (uint64_t{1} << rt.cores()) - 1;
        detail::check(hos_thread_attach(rt.get(), &params, &h_));
    }
    ~AttachedThread() { hos_thread_detach(); }
    AttachedThread(AttachedThread&&) = delete;
    AttachedThread& operator=(AttachedThread&&) = delete;
};

// The calling thread's kick word: test it inline at loop heads, call checkpoint() when set.
inline const volatile uint32_t* kick_flag() noexcept { return hos_thread_kick_flag(); }

// Where a kicked guest thread gives its virtual core up.
inline void checkpoint() noexcept { hos_checkpoint(); }

// An event, auto- or manual-clear.
class Event : public Handle {
public:
    enum class Clear { Auto, Manual };
    explicit Event(Clear clear = Clear::Auto) {
        detail::check(hos_event_create(clear == Clear::Auto ? 1 : 0, &h_));
    }
    hos_result signal() noexcept { return hos_event_signal(h_); }
    hos_result clear() noexcept { return hos_event_clear(h_); }
    // Success, TimedOut (timeout_ns 0 polls) or Cancelled.
    hos_result wait(int64_t timeout_ns = -1) noexcept { return hos_event_wait(h_, timeout_ns); }
};

// A kernel event (svcCreateEvent): one manual-clear event named by two handles, a writable
// one (signal, clear) and a readable one (waited on without being consumed, reset), as the
// SDK's SystemEvent has them.
class KernelEvent {
public:
    KernelEvent() {
        hos_handle w = 0, r = 0;
        detail::check(hos_svc_create_event(&w, &r));
        write_ = Handle(w);
        read_ = Handle(r);
    }
    hos_result signal() noexcept { return hos_svc_signal_event(write_.get()); }
    hos_result clear() noexcept { return hos_svc_clear_event(write_.get()); }
    // Success if it was signalled (it is cleared), InvalidState if it was not.
    hos_result reset() noexcept { return hos_svc_reset_signal(read_.get()); }
    // Success, TimedOut (timeout_ns 0 polls) or Cancelled; the signal stays.
    hos_result wait(int64_t timeout_ns = -1) noexcept {
        hos_handle h = read_.get();
        int32_t index = 0;
        return hos_svc_wait_synchronization(&index, &h, 1, timeout_ns);
    }
    hos_handle writable() const noexcept { return write_.get(); }
    hos_handle readable() const noexcept { return read_.get(); }

private:
    Handle write_, read_;
};

// A bounded queue of uint64_t messages.
class Queue : public Handle {
public:
    explicit Queue(uint32_t capacity) { detail::check(hos_queue_create(capacity, &h_)); }
    // Success, TimedOut (not sent; timeout_ns 0 tries once) or Cancelled.
    hos_result send(uint64_t message, int64_t timeout_ns = -1) noexcept {
        return hos_queue_send(h_, message, timeout_ns);
    }
    // Success (message written), TimedOut (timeout_ns 0 tries once) or Cancelled.
    hos_result receive(uint64_t& message, int64_t timeout_ns = -1) noexcept {
        return hos_queue_receive(h_, &message, timeout_ns);
    }
};

// A mutex, usable with std::lock_guard and std::unique_lock. lock() takes over a lock whose
// last owner ended holding it (Abandoned) like any other.
class Mutex : public Handle {
public:
    explicit Mutex(bool recursive = false) { detail::check(hos_mutex_create(recursive ? 1 : 0, &h_)); }
    void lock() {
        hos_result r = hos_mutex_lock(h_, -1);
        if (r != HOS_RESULT_ABANDONED) {
            detail::check(r);
        }
    }
    bool try_lock() noexcept {
        hos_result r = hos_mutex_lock(h_, 0);
        return r == HOS_RESULT_SUCCESS || r == HOS_RESULT_ABANDONED;
    }
    void unlock() noexcept { hos_mutex_unlock(h_); }
};

}  // namespace hos

#endif  // HOS_HPP
