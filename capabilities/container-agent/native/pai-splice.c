/*
 * pai-splice — moves exactly N bytes from one socket to another in the kernel, for a host process that would
 * otherwise copy them through its own memory (the preview gateway, a large response body from a sandbox's port to
 * the browser's connection). The bytes go through a kernel pipe with splice(2): they never enter this program's
 * memory, it parses nothing, and it holds no other descriptor worth having.
 *
 * Usage: pai-splice BYTES     (fd 3: where the bytes go, fd 4: where they come from; both sockets, left open)
 *
 * Neither socket is shut down or closed by this program: the parent goes on using both (the destination carries the
 * next response of a kept-alive connection). Nothing is read beyond BYTES. Before moving anything it sets
 * no_new_privs and a seccomp filter allowing only its loop's system calls.
 *
 * Exit status: 0 when all BYTES moved; 1 when the source ended or failed first; 2 when the destination failed (the
 * reader went away); 64 for a bad argument; 70 when the pipe or the filter cannot be set up. Either way the number of
 * bytes moved to the destination is printed on stdout (decimal, then a newline).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "least-privilege.h"

#define DESTINATION 3
#define SOURCE 4
#define PIPE_BYTES (1024u * 1024u)

/* The system calls of the loop below (and of printing the count and exiting). */
static const long SPLICE_SYSCALLS[] = {
    SYS_splice, SYS_ppoll, SYS_write, SYS_writev, SYS_exit, SYS_exit_group,
#ifdef SYS_poll
    SYS_poll,
#endif
    SYS_rt_sigreturn, SYS_ioctl,
};

static uint64_t moved;

static int finish(int status) {
  printf("%llu\n", (unsigned long long)moved);
  fflush(stdout);
  return status;
}

static void wait_for(int fd, short events) {
  struct pollfd p = {fd, events, 0};
  poll(&p, 1, -1);
}

int main(int argc, char **argv) {
  char *end = NULL;
  errno = 0;
  unsigned long long wanted = argc == 2 ? strtoull(argv[1], &end, 10) : 0;
  if (argc != 2 || errno != 0 || end == argv[1] || *end != '\0' || argv[1][0] == '-') {
    fprintf(stderr, "usage: pai-splice BYTES (fd 3: destination, fd 4: source)\n");
    return finish(64);
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) return finish(70);
  fcntl(pipe_fds[1], F_SETPIPE_SZ, PIPE_BYTES);
  if (lp_restrict_syscalls(SPLICE_SYSCALLS, sizeof SPLICE_SYSCALLS / sizeof *SPLICE_SYSCALLS) != 0)
    return finish(70);

  uint64_t left = wanted; /* not yet read from the source */
  size_t held = 0;        /* in the pipe, not yet written */
  while (left > 0 || held > 0) {
    if (held > 0) {
      ssize_t n = splice(pipe_fds[0], NULL, DESTINATION, NULL, held, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        held -= (size_t)n;
        moved += (uint64_t)n;
      } else if (n < 0 && errno == EAGAIN) {
        wait_for(DESTINATION, POLLOUT);
      } else if (!(n < 0 && errno == EINTR)) {
        return finish(2);
      }
      continue;
    }
    size_t want = left < PIPE_BYTES ? (size_t)left : PIPE_BYTES;
    ssize_t n = splice(SOURCE, NULL, pipe_fds[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      held = (size_t)n;
      left -= (uint64_t)n;
    } else if (n < 0 && errno == EAGAIN) {
      wait_for(SOURCE, POLLIN);
    } else if (!(n < 0 && errno == EINTR)) {
      return finish(1); /* EOF (n == 0) or an error before all came */
    }
  }
  return finish(0);
}
