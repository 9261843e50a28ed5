/*
 * splice-relay.h — moves bytes both ways between two connected sockets. Shared by pai-agent (a program's
 * connection <-> the host's egress socket) and pai-egress-relay (the agent's connection <-> the upstream server).
 * Header-only: every function is static.
 *
 * Direction i carries what fd[i] sends to fd[1 - i], through a kernel pipe (splice: the bytes never enter user
 * memory) or, when asked, through a buffer of the same size (read/write). Splicing moves page references, 4 KiB
 * each: cheap into a unix socket, but a TCP socket fed that way sends small-fragment packets its reader pays for,
 * so a direction whose destination is the program's TCP connection copies instead (measured: about a quarter
 * faster for curl at the end of the chain). A read from fd[i] waits until what it read is written to fd[1 - i]
 * (so EAGAIN there means no data, not a full pipe); fd[i]'s end shuts down fd[1 - i]'s write half once all is
 * written; an error or reset on either side ends the relay. A cap bounds the bytes read both ways together: once
 * reached, nothing more is read and the relay ends when both directions are drained.
 *
 * The includer defines _GNU_SOURCE (for splice and F_SETPIPE_SZ) before any system header.
 */
#ifndef PAI_SPLICE_RELAY_H
#define PAI_SPLICE_RELAY_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_PIPE (1024u * 1024u) /* kernel pipe (or buffer) per direction */
#define RELAY_UNCAPPED UINT64_MAX

typedef struct {
  int fd[2];      /* the two sockets; -1 once closed */
  int pipe[2][2]; /* pipe[i]: bytes read from fd[i], not yet written to fd[1 - i] (splicing directions) */
  unsigned char *buf[2]; /* the same, for a copying direction (NULL when it splices) */
  size_t off[2];  /* where the unwritten bytes start in buf[i] */
  size_t held[2]; /* bytes in pipe[i] or buf[i], not yet written */
  int rd[2];      /* still reading fd[i] */
  int shut[2];    /* fd[1 - i] shut down for writing (direction i is over) */
  uint64_t taken[2]; /* bytes read from fd[i] so far */
  uint64_t cap;      /* most bytes read both ways together (RELAY_UNCAPPED: no limit) */
} relay_t;

static void relay_close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* Closes both sockets and both pipes. Idempotent. */
static void relay_close(relay_t *r) {
  for (int i = 0; i < 2; i++) {
    relay_close_fd(&r->fd[i]);
    relay_close_fd(&r->pipe[i][0]);
    relay_close_fd(&r->pipe[i][1]);
    free(r->buf[i]);
    r->buf[i] = NULL;
    r->held[i] = 0;
  }
}

/*
 * Sets up a relay between fd0 and fd1 (both non-blocking): direction i copies when bit i of `copy` is set, else
 * splices through a pipe. 0 on success; -1 when a pipe or buffer cannot be made (the sockets are then left to the
 * caller, open).
 */
static int relay_init(relay_t *r, int fd0, int fd1, uint64_t cap, unsigned copy) {
  r->fd[0] = fd0;
  r->fd[1] = fd1;
  r->cap = cap;
  for (int i = 0; i < 2; i++) {
    r->rd[i] = 1;
    r->shut[i] = 0;
    r->held[i] = 0;
    r->taken[i] = 0;
    r->off[i] = 0;
    r->buf[i] = NULL;
    r->pipe[i][0] = r->pipe[i][1] = -1;
  }
  for (int i = 0; i < 2; i++) {
    if (copy & (1u << i) ? (r->buf[i] = malloc(RELAY_PIPE)) == NULL : pipe2(r->pipe[i], O_NONBLOCK | O_CLOEXEC) != 0) {
      r->pipe[i][0] = r->pipe[i][1] = -1;
      r->fd[0] = r->fd[1] = -1;
      relay_close(r);
      return -1;
    }
    if (!r->buf[i]) fcntl(r->pipe[i][1], F_SETPIPE_SZ, RELAY_PIPE);
  }
  return 0;
}

/* Writes held bytes of direction i to dst: n > 0 moved, 0 would block (errno EAGAIN) or interrupted, -1 failed. */
static ssize_t relay_out(relay_t *r, int i, int dst) {
  if (r->buf[i]) return send(dst, r->buf[i] + r->off[i], r->held[i], MSG_NOSIGNAL | MSG_DONTWAIT);
  return splice(r->pipe[i][0], NULL, dst, NULL, r->held[i], SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

/* Reads up to `want` bytes of direction i from src (its buffer or pipe being empty). */
static ssize_t relay_in(relay_t *r, int i, int src, size_t want) {
  if (r->buf[i]) {
    r->off[i] = 0;
    return recv(src, r->buf[i], want, MSG_DONTWAIT);
  }
  return splice(src, NULL, r->pipe[i][1], NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

/* Bytes the relay may still read (both ways together). */
static uint64_t relay_budget(const relay_t *r) {
  uint64_t taken = r->taken[0] + r->taken[1];
  return taken >= r->cap ? 0 : r->cap - taken;
}

/*
 * Moves what direction i can move now: drains its pipe into fd[1 - i], and only with the pipe empty reads more
 * from fd[i]. 0 to wait for poll; -1 when the relay must close (a reset, a peer gone, both directions over, or
 * the cap reached with both pipes drained).
 */
static int relay_pump(relay_t *r, int i) {
  int src = r->fd[i], dst = r->fd[1 - i];
  for (;;) {
    if (r->held[i] > 0) {
      ssize_t n = relay_out(r, i, dst);
      if (n > 0) {
        r->held[i] -= (size_t)n;
        r->off[i] += (size_t)n;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return 0; /* wait until dst takes more */
      return -1;
    }
    if (!r->rd[i]) break;
    uint64_t budget = relay_budget(r);
    if (budget == 0) return r->held[1 - i] > 0 ? 0 : -1; /* spent: end once the other pipe is drained too */
    size_t want = budget < RELAY_PIPE ? (size_t)budget : RELAY_PIPE;
    ssize_t n = relay_in(r, i, src, want);
    if (n > 0) {
      r->held[i] = (size_t)n;
      r->taken[i] += (uint64_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    if (n < 0) return -1;
    r->rd[i] = 0; /* EOF */
  }
  if (!r->shut[i]) {
    shutdown(dst, SHUT_WR);
    r->shut[i] = 1;
  }
  return r->shut[0] && r->shut[1] ? -1 : 0; /* both directions over: done */
}

/* What to poll fd[j] for: input when direction j may read, output when direction 1 - j holds bytes for it. */
static short relay_events(const relay_t *r, int j) {
  short ev = 0;
  if (r->rd[j] && r->held[j] == 0 && relay_budget(r) > 0) ev |= POLLIN;
  if (r->held[1 - j] > 0) ev |= POLLOUT;
  return ev;
}

#endif
