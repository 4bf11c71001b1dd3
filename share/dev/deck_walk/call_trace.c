// The entries and exits of every instrumented function of the main thread, one line each
// ("> OFFSET" or "<"), OFFSET the function's address less its object's load address, written to
// $DECK_WALK_TRACE.PID. Linked into a ddptrain built with -finstrument-functions (deck_walk.sh).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static FILE* trace_file(void) __attribute__((no_instrument_function));
static FILE* trace_file(void) {
  static FILE* out;
  if (!out) {
    const char* prefix = getenv("DECK_WALK_TRACE");
    if (!prefix) return NULL;
    char name[4096];
    snprintf(name, sizeof name, "%s.%d", prefix, (int)getpid());
    out = fopen(name, "w");
  }
  return out;
}

// Other threads (checkpoint writer, prefetch, watchdog) would interleave their calls with the
// walk; only the main thread's are kept.
static int on_main_thread(void) __attribute__((no_instrument_function));
static int on_main_thread(void) {
  return syscall(SYS_gettid) == getpid();
}

void __cyg_profile_func_enter(void* function, void* call_site)
    __attribute__((no_instrument_function));
void __cyg_profile_func_enter(void* function, void* call_site) {
  (void)call_site;
  Dl_info info;
  FILE* out = on_main_thread() ? trace_file() : NULL;
  if (out && dladdr(function, &info) && info.dli_fbase)
    fprintf(out, "> %lx\n", (unsigned long)((char*)function - (char*)info.dli_fbase));
}

void __cyg_profile_func_exit(void* function, void* call_site)
    __attribute__((no_instrument_function));
void __cyg_profile_func_exit(void* function, void* call_site) {
  (void)function;
  (void)call_site;
  FILE* out = on_main_thread() ? trace_file() : NULL;
  if (out) fputs("<\n", out);
}
