/* Preloaded into the worker under valgrind by benchmarks/run (the instructions scenario).
 *
 * valgrind 3.19 (Debian 12's) writes into the signal mask a program hands to sigsuspend, and
 * faults when that mask is read-only, which is the case for libdispatch's: every Swift program
 * whose async main suspends ends its main thread in dispatch's signal thread there. This
 * sigsuspend passes the kernel a writable copy of the same mask. */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, _NSIG / 8);
}
