/*
 * least-privilege.h — what a host-side helper that reads a container's bytes keeps of its privileges once it is
 * set up: another uid/gid (no supplementary groups), no_new_privs, and a seccomp filter that allows only the system
 * calls it names. Header-only: every function is static. Used by pai-egress-relay and pai-splice.
 *
 * The seccomp constants are the kernel's ABI (linux/seccomp.h, linux/filter.h, linux/audit.h), written out here
 * because musl-gcc has no kernel headers; syscall numbers come from the libc's <sys/syscall.h>, so the same list
 * builds for every architecture. The filter first checks the architecture (a process of another ABI is killed),
 * then compares the call number with each allowed one; any other call fails with EPERM, so a program that an
 * attacker made the helper run can do nothing the list does not let it.
 *
 * The includer defines _GNU_SOURCE before any system header.
 */
#ifndef PAI_LEAST_PRIVILEGE_H
#define PAI_LEAST_PRIVILEGE_H

#include <errno.h>
#include <grp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_SET_NO_NEW_PRIVS
#define PR_SET_NO_NEW_PRIVS 38
#endif
#ifndef PR_SET_SECCOMP
#define PR_SET_SECCOMP 22
#endif
#define LP_SECCOMP_MODE_FILTER 2
#define LP_SECCOMP_RET_KILL_PROCESS 0x80000000u
#define LP_SECCOMP_RET_ERRNO 0x00050000u
#define LP_SECCOMP_RET_ALLOW 0x7fff0000u
/* BPF opcodes: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K */
#define LP_LD_ABS 0x20
#define LP_JEQ 0x15
#define LP_RET 0x06
/* struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] */
#define LP_DATA_NR 0
#define LP_DATA_ARCH 4

#if defined(__x86_64__)
#define LP_AUDIT_ARCH 0xc000003eu /* AUDIT_ARCH_X86_64 */
#elif defined(__aarch64__)
#define LP_AUDIT_ARCH 0xc00000b7u /* AUDIT_ARCH_AARCH64 */
#else
#error "least-privilege.h: no audit architecture for this machine"
#endif

struct lp_sock_filter {
  uint16_t code;
  uint8_t jt, jf;
  uint32_t k;
};
struct lp_sock_fprog {
  unsigned short len;
  struct lp_sock_filter *filter;
};

/*
 * Becomes `uid`/`gid` with no supplementary groups, for good (the saved ids too). Only root can; a process that is
 * not root keeps its ids (returns 0: there is nothing to drop). -1 with errno when a step fails.
 */
__attribute__((unused)) static int lp_drop_to(uid_t uid, gid_t gid) {
  if (geteuid() != 0) return 0;
  if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)) return -1;
  /* Root must be gone for good: regaining it has to fail. */
  if (setresuid(0, 0, 0) == 0) {
    errno = EPERM;
    return -1;
  }
  return 0;
}

/*
 * Sets no_new_privs and installs a filter that allows the `count` system calls in `allowed` and fails every other
 * with EPERM (one of another architecture kills the process). -1 with errno when the kernel refuses.
 */
__attribute__((unused)) static int lp_restrict_syscalls(const long *allowed, size_t count) {
  if (count > 255) { /* a jump offset is one byte */
    errno = EINVAL;
    return -1;
  }
  /* arch check (3), load the number (1), one test per allowed call, EPERM, ALLOW */
  size_t len = 4 + count + 2, i = 0;
  struct lp_sock_filter *f = calloc(len, sizeof *f);
  if (!f) return -1;
  f[i++] = (struct lp_sock_filter){LP_LD_ABS, 0, 0, LP_DATA_ARCH};
  f[i++] = (struct lp_sock_filter){LP_JEQ, 1, 0, LP_AUDIT_ARCH};
  f[i++] = (struct lp_sock_filter){LP_RET, 0, 0, LP_SECCOMP_RET_KILL_PROCESS};
  f[i++] = (struct lp_sock_filter){LP_LD_ABS, 0, 0, LP_DATA_NR};
  /* The k-th test jumps over the tests after it and the EPERM, to the ALLOW. */
  for (size_t k = 0; k < count; k++)
    f[i++] = (struct lp_sock_filter){LP_JEQ, (uint8_t)(count - k), 0, (uint32_t)allowed[k]};
  f[i++] = (struct lp_sock_filter){LP_RET, 0, 0, LP_SECCOMP_RET_ERRNO | EPERM};
  f[i++] = (struct lp_sock_filter){LP_RET, 0, 0, LP_SECCOMP_RET_ALLOW};
  struct lp_sock_fprog prog = {.len = (unsigned short)len, .filter = f};
  int r = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (r == 0) r = prctl(PR_SET_SECCOMP, LP_SECCOMP_MODE_FILTER, &prog, 0, 0);
  free(f);
  return r;
}

#endif
