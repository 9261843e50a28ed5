/*
 * pai-egress-relay — the host side of the egress fast channel, in the kernel's data path.
 *
 * One per PAI process, spawned by it (`createEgressRelay`). It listens on a unix socket (argv[1], mode 0666) that
 * containers see through a read-only mount; each container's agent relays every connection a program makes to
 * its proxy port there, opening with `PAI-EGRESS/1 <token>\n`. The relay admits the connection when the token is
 * one the parent admitted, reads the HTTP proxy request head and hands it to the parent, which decides (policy,
 * limits) and answers: refuse with these bytes, or connect to one of these addresses and relay. The relay then
 * connects upstream itself and splices bytes both ways (splice-relay.h), never through user memory, reporting
 * the bytes moved and the close. It decides nothing itself beyond the token and the sizes below.
 *
 * Control channel: stdin (parent -> relay) and stdout (relay -> parent), in frames
 * `u32 BE payload length | u8 type | u32 BE id | payload`, the id being a connection's (or an admission's).
 *
 *   parent -> relay
 *     0x01 ADMIT    id: admission   token (1..128 printable bytes)
 *     0x02 REVOKE   id: admission   -
 *     0x03 REFUSE   id: connection  bytes for the program; the relay writes them, shuts its side down and
 *                                   drops what the program still sends until it hangs up
 *     0x04 CONNECT  id: connection  u32 timeout ms | u64 cap | u16 port | u8 flags (1: report the upstream's
 *                                   HTTP status) | u8 count | count x (u8 family 4|6, 16 address bytes) |
 *                                   u32 prelude length | prelude (for the program) | bytes for the upstream
 *     0x05 CLOSE    id: connection  -
 *     0x06 LISTEN   id 0            - : the admissions so far are all that exist now; bind and listen (once)
 *   relay -> parent
 *     0x81 READY    id 0            version
 *     0x82 OPEN     id: connection  u32 admission (its token was admitted)
 *     0x83 HEAD     id: connection  the request head, without its blank line
 *     0x84 TOO_BIG  id: connection  - (no blank line within MAX_HEAD bytes)
 *     0x85 CONNECTED id: connection u8 index of the address connected to
 *     0x86 FAILED   id: connection  why (an errno name)
 *     0x87 STATUS   id: connection  u16 the upstream's HTTP status
 *     0x88 BYTES    id: connection  u64 up | u64 down, so far (every REPORT_EVERY bytes)
 *     0x89 CLOSED   id: connection  u64 up | u64 down, in all; the id is then forgotten
 *     0x8a COUNTS   id 0            u32 refused so far | u32 connections without a token yet
 *
 * Connections without a token: the header line must come within HEADER_TIMEOUT_MS and MAX_HEADER_LINE bytes;
 * past MAX_UNIDENTIFIED of them the oldest is closed. A wrong, revoked or missing token closes the connection at
 * once, unseen by the parent (only counted). The relay reads the parent's commands up to LISTEN before it binds
 * its socket, so a relay started again for containers that are already running knows all their tokens before the
 * first of them can connect; afterwards it reads the parent's commands before accepting, so a token admitted
 * before its agent connects is always known. Every fd is non-blocking and one poll() loop serves all of them, so
 * no peer can stall another; memory is bounded (MAX_CONNECTIONS, each holding at most its head). The relay exits
 * when its parent does (stdin EOF), on SIGTERM/SIGINT/SIGHUP, and removes its socket file then.
 *
 * Least privilege: once its socket listens, and before it says READY, the relay becomes UID:GID (argv[2]; "-" keeps
 * its ids; without it a relay started as root becomes 65534:65534, nobody), with no supplementary groups, sets
 * no_new_privs and installs a seccomp filter allowing only the system calls of its loop (RELAY_SYSCALLS below):
 * no file can be opened, no program executed. As another user it cannot remove its socket file from a directory
 * of root's at exit; its parent does.
 *
 * `--without-seccomp` (argv[3]) skips the filter, for an emulator that cannot install a guest's (qemu-user answers
 * EINVAL; the aarch64 build's test runs under it); otherwise a kernel that refuses the filter stops the relay.
 *
 * Usage: pai-egress-relay SOCKET_PATH [UID:GID | - [--without-seccomp]]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "least-privilege.h"
#include "splice-relay.h"
#include "wire.h"

#ifndef PAI_AGENT_BUILD
#define PAI_AGENT_BUILD "dev"
#endif
#define RELAY_VERSION "1+" PAI_AGENT_BUILD

#define HDR 9u
#define MAX_CONTROL_PAYLOAD (1024u * 1024u)
#define MAX_TOKEN 128u
#define MAX_HEADER_LINE 160u        /* `PAI-EGRESS/1 <token>` without its newline, at most */
#define HEADER_TIMEOUT_MS 5000
#define MAX_UNIDENTIFIED 64u
#define MAX_HEAD (32u * 1024u)      /* the request head, without its blank line */
#define MAX_CONNECTIONS 4096u
#define MAX_ADDRESSES 16u
#define REPORT_EVERY (1024u * 1024u)
#define OUT_MAX (64u * 1024u * 1024u) /* control bytes the parent has not read: past this it is not reading */

enum { IN_ADMIT = 0x01, IN_REVOKE, IN_REFUSE, IN_CONNECT, IN_CLOSE, IN_LISTEN };
enum {
  OUT_READY = 0x81,
  OUT_OPEN,
  OUT_HEAD,
  OUT_TOO_BIG,
  OUT_CONNECTED,
  OUT_FAILED,
  OUT_STATUS,
  OUT_BYTES,
  OUT_CLOSED,
  OUT_COUNTS,
};

typedef enum {
  S_HEADER,     /* waiting for the token line */
  S_HEAD,       /* admitted; reading the request head */
  S_DECIDING,   /* head sent to the parent; waiting for REFUSE or CONNECT */
  S_CONNECTING, /* connecting upstream */
  S_RELAYING,   /* writing the prelude and the head, then splicing */
  S_REFUSING,   /* writing the refusal, then dropping input until the program hangs up */
} state_t;

typedef struct {
  uint32_t id;
  state_t state;
  int fd;                /* the agent's connection (until S_RELAYING, where it is r.fd[0]) */
  int up;                /* the upstream socket while connecting */
  uint64_t seq;          /* accept order, to find the oldest unidentified connection */
  uint64_t deadline;     /* ms (monotonic): header timeout, or this connect attempt's */
  unsigned char *buf;    /* header line and head bytes read so far; later what follows the head */
  size_t len, cap;
  size_t searched;       /* head bytes already searched for the blank line */
  /* connecting */
  struct sockaddr_storage addr[MAX_ADDRESSES];
  socklen_t addr_len[MAX_ADDRESSES];
  unsigned naddr, next;
  uint32_t timeout_ms;
  uint64_t limit;
  int want_status;
  /* relaying: pre[i] is written to fd[1 - i] before direction i splices (pre[0]: head for the upstream,
     pre[1]: prelude for the program); while refusing, pre[1] is the answer */
  unsigned char *pre[2];
  size_t pre_len[2], pre_off[2];
  int refuse_shut;
  relay_t r;
  int relaying;
  uint64_t reported;
} conn_t;

typedef struct {
  uint32_t id;
  size_t len;
  char token[MAX_TOKEN];
} admission_t;

static const char *socket_path;
static int listen_fd = -1;
static conn_t **conns;
static size_t nconns, conns_cap;
static uint32_t next_id = 1;
static uint64_t next_seq;
static uint64_t accept_after; /* ms (monotonic): out of fds, the listener rests until then */
static admission_t *admissions;
static size_t nadmissions, admissions_cap;
static uint32_t refused_count, unidentified;
static int counts_dirty;
static unsigned char *out;
static size_t out_len, out_cap;
static unsigned char *in;
static size_t in_len;
static volatile sig_atomic_t stopping;
static int parent_gone; /* stdin ended, or the parent spoke nonsense */
static int listen_asked; /* LISTEN came */

static int read_parent(void);

static void die(const char *what) {
  fprintf(stderr, "pai-egress-relay: fatal: %s: %s\n", what, strerror(errno));
  if (socket_path) unlink(socket_path);
  _exit(70);
}

static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n);
  if (!p) die("out of memory");
  return p;
}

static uint64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static void put_u64(unsigned char *p, uint64_t v) {
  put_u32(p, (uint32_t)(v >> 32));
  put_u32(p + 4, (uint32_t)v);
}

/* ------------------------------------------------------------------ control channel */

static void send_frame(unsigned type, uint32_t id, const void *payload, size_t len) {
  if (out_len + HDR + len > OUT_MAX) {
    errno = ENOBUFS;
    die("the parent is not reading");
  }
  if (out_len + HDR + len > out_cap) {
    while (out_len + HDR + len > out_cap) out_cap = out_cap ? out_cap * 2 : 64 * 1024;
    out = xrealloc(out, out_cap);
  }
  unsigned char *p = out + out_len;
  put_u32(p, (uint32_t)len);
  p[4] = (unsigned char)type;
  put_u32(p + 5, id);
  if (len) memcpy(p + HDR, payload, len);
  out_len += HDR + len;
}

static void send_totals(unsigned type, conn_t *c) {
  unsigned char p[16];
  put_u64(p, c->r.taken[0]);
  put_u64(p + 8, c->r.taken[1]);
  send_frame(type, c->id, p, sizeof p);
  c->reported = c->r.taken[0] + c->r.taken[1];
}

/* Writes what it can of the control output; -1 when the parent is gone. */
static int flush_out(void) {
  size_t done = 0;
  while (done < out_len) {
    ssize_t n = write(1, out + done, out_len - done);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    return -1;
  }
  memmove(out, out + done, out_len - done);
  out_len -= done;
  return 0;
}

/* ------------------------------------------------------------------ connections */

static conn_t *find_conn(uint32_t id) {
  for (size_t i = 0; i < nconns; i++)
    if (conns[i]->id == id && conns[i]->fd >= 0) return conns[i];
  return NULL;
}

static void free_pre(conn_t *c) {
  for (int i = 0; i < 2; i++) {
    free(c->pre[i]);
    c->pre[i] = NULL;
    c->pre_len[i] = c->pre_off[i] = 0;
  }
}

/* Closes a connection; one the parent knows of is reported CLOSED. It is removed from the table later. */
static void conn_close(conn_t *c) {
  if (c->fd < 0) return;
  if (c->state == S_HEADER) {
    unidentified--;
    counts_dirty = 1;
  } else {
    send_totals(OUT_CLOSED, c);
  }
  if (c->relaying) {
    relay_close(&c->r);
  } else {
    close(c->fd);
    relay_close_fd(&c->up);
  }
  c->fd = -1;
  c->relaying = 0;
  free(c->buf);
  c->buf = NULL;
  c->len = c->cap = 0;
  free_pre(c);
}

static void conn_refuse_unseen(conn_t *c) {
  refused_count++;
  counts_dirty = 1;
  conn_close(c);
}

static void remove_closed(void) {
  for (size_t i = 0; i < nconns;) {
    if (conns[i]->fd < 0) {
      free(conns[i]);
      conns[i] = conns[--nconns];
    } else {
      i++;
    }
  }
}

/* Reads what the connection sent into its buffer, up to `limit` bytes held. 1: more came; 0: nothing now; -1: gone. */
static int read_into(conn_t *c, size_t limit) {
  if (c->len >= limit) return 0;
  if (c->cap < limit) {
    size_t cap = c->cap ? c->cap * 2 : 1024;
    if (cap > limit) cap = limit;
    if (c->len == c->cap) {
      c->buf = xrealloc(c->buf, cap);
      c->cap = cap;
    }
  }
  ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
  if (n > 0) {
    c->len += (size_t)n;
    return 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  return -1;
}

/* The admission of `token`, compared in constant time (a program may time its guesses). */
static const admission_t *find_token(const unsigned char *token, size_t len) {
  const admission_t *found = NULL;
  for (size_t i = 0; i < nadmissions; i++) {
    if (admissions[i].len != len) continue;
    unsigned char diff = 0;
    for (size_t k = 0; k < len; k++) diff |= (unsigned char)(admissions[i].token[k] ^ token[k]);
    if (diff == 0) found = &admissions[i];
  }
  return found;
}

static void on_head(conn_t *c);

/* The token line `PAI-EGRESS/1 <token>`: admitted (-> S_HEAD), refused, or still incomplete. */
static void on_header(conn_t *c) {
  for (;;) {
    int got = read_into(c, MAX_HEADER_LINE + 1 + MAX_HEAD + 4);
    if (got < 0) return conn_close(c); /* gone before its header: not a refusal */
    unsigned char *nl = memchr(c->buf, '\n', c->len < MAX_HEADER_LINE + 1 ? c->len : MAX_HEADER_LINE + 1);
    if (!nl) {
      if (c->len > MAX_HEADER_LINE) return conn_refuse_unseen(c);
      if (got == 0) return;
      continue;
    }
    static const char prefix[] = "PAI-EGRESS/1 ";
    size_t line = (size_t)(nl - c->buf), plen = sizeof prefix - 1;
    const admission_t *a = NULL;
    if (line > plen && line - plen <= MAX_TOKEN && memcmp(c->buf, prefix, plen) == 0) {
      int printable = 1;
      for (size_t k = plen; k < line && printable; k++) printable = c->buf[k] > 0x20 && c->buf[k] < 0x7f;
      if (printable) a = find_token(c->buf + plen, line - plen);
      /* The parent admits a token before giving it to an agent: its ADMIT may still wait in the pipe. */
      if (printable && !a && !parent_gone && read_parent() == 0) a = find_token(c->buf + plen, line - plen);
    }
    if (!a) return conn_refuse_unseen(c);
    unsigned char p[4];
    put_u32(p, a->id);
    c->state = S_HEAD;
    unidentified--;
    counts_dirty = 1;
    send_frame(OUT_OPEN, c->id, p, sizeof p);
    memmove(c->buf, nl + 1, c->len - line - 1);
    c->len -= line + 1;
    return on_head(c); /* the head may have come with the header */
  }
}

/* The request head: sent to the parent once its blank line came, or TOO_BIG past MAX_HEAD bytes. */
static void on_head(conn_t *c) {
  for (;;) {
    /* Only what came since the last search (and the 3 bytes before it) can hold the blank line: a head that drips
       in a byte at a time costs the relay linear time, not quadratic. */
    size_t from = c->searched > 3 ? c->searched - 3 : 0;
    unsigned char *end = c->len >= from + 4 ? memmem(c->buf + from, c->len - from, "\r\n\r\n", 4) : NULL;
    c->searched = c->len;
    if (end) {
      size_t head = (size_t)(end - c->buf);
      if (head > MAX_HEAD) break;
      send_frame(OUT_HEAD, c->id, c->buf, head);
      memmove(c->buf, end + 4, c->len - head - 4); /* what follows the head goes upstream after it */
      c->len -= head + 4;
      c->state = S_DECIDING;
      return;
    }
    if (c->len >= MAX_HEAD + 4) break;
    int got = read_into(c, MAX_HEAD + 4);
    if (got < 0) return conn_close(c);
    if (got == 0) return;
  }
  send_frame(OUT_TOO_BIG, c->id, NULL, 0);
  c->len = 0;
  c->state = S_DECIDING;
}

static void send_failed(conn_t *c, int err) {
  const char *name = err == ETIMEDOUT      ? "ETIMEDOUT"
                     : err == ECONNREFUSED ? "ECONNREFUSED"
                     : err == EHOSTUNREACH ? "EHOSTUNREACH"
                     : err == ENETUNREACH  ? "ENETUNREACH"
                     : err == EADDRNOTAVAIL ? "EADDRNOTAVAIL"
                     : err == EACCES || err == EPERM ? "EACCES"
                     : err == EMFILE || err == ENFILE ? "EMFILE"
                                           : "ECONNABORTED";
  c->state = S_DECIDING;
  send_frame(OUT_FAILED, c->id, name, strlen(name));
}

/* Starts connecting to the next address; on the last one's failure, FAILED. */
static void connect_next(conn_t *c, int last_err) {
  while (c->next < c->naddr) {
    unsigned k = c->next++;
    int fd = socket(c->addr[k].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) {
      last_err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&c->addr[k], c->addr_len[k]) == 0 || errno == EINPROGRESS) {
      c->up = fd;
      c->deadline = now_ms() + c->timeout_ms;
      c->state = S_CONNECTING;
      return;
    }
    last_err = errno;
    close(fd);
  }
  send_failed(c, last_err);
}

static void start_relay(conn_t *c) {
  unsigned char index = (unsigned char)(c->next - 1);
  send_frame(OUT_CONNECTED, c->id, &index, 1);
  int client = c->fd, up = c->up;
  if (relay_init(&c->r, client, up, c->limit, 0)) { /* both ways spliced: measured faster than copying here */
    relay_close_fd(&c->up);
    send_failed(c, EMFILE);
    return;
  }
  c->up = -1;
  c->relaying = 1;
  c->state = S_RELAYING;
  /* The prelude and the head count like relayed bytes (the parent counts them so on its own path too). */
  c->r.taken[0] += c->pre_len[0];
  c->r.taken[1] += c->pre_len[1];
}

static void on_connecting(conn_t *c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c->up, SOL_SOCKET, SO_ERROR, &err, &len)) err = errno;
  if (err == EINPROGRESS || err == EALREADY) return;
  if (err) {
    relay_close_fd(&c->up);
    return connect_next(c, err);
  }
  start_relay(c);
}

/* Writes what is left of pre[i] to fd[1 - i]: 1 when all is written, 0 to wait, -1 when that peer is gone. */
static int flush_pre(conn_t *c, int i, int fd) {
  while (c->pre_off[i] < c->pre_len[i]) {
    ssize_t n = send(fd, c->pre[i] + c->pre_off[i], c->pre_len[i] - c->pre_off[i], MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c->pre_off[i] += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    return -1;
  }
  return 1;
}

/* Peeks at the upstream's first bytes for its status line (plain HTTP), once. */
static void peek_status(conn_t *c) {
  char b[16];
  ssize_t n = recv(c->r.fd[1], b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && errno == EAGAIN) return; /* nothing yet */
  c->want_status = 0;
  if (n >= 12 && memcmp(b, "HTTP/1.", 7) == 0 && (b[7] == '0' || b[7] == '1') && b[8] == ' ' && b[9] >= '0' &&
      b[9] <= '9' && b[10] >= '0' && b[10] <= '9' && b[11] >= '0' && b[11] <= '9') {
    unsigned status = (unsigned)(b[9] - '0') * 100 + (unsigned)(b[10] - '0') * 10 + (unsigned)(b[11] - '0');
    unsigned char p[2] = {(unsigned char)(status >> 8), (unsigned char)status};
    send_frame(OUT_STATUS, c->id, p, 2);
  }
}

static void on_relaying(conn_t *c) {
  for (int i = 0; i < 2; i++) {
    int done = flush_pre(c, i, c->r.fd[1 - i]);
    if (done < 0) return conn_close(c);
    if (done == 0) continue;
    if (i == 1 && c->want_status) peek_status(c);
    if (relay_pump(&c->r, i)) return conn_close(c);
  }
  if (c->r.taken[0] + c->r.taken[1] - c->reported >= REPORT_EVERY) send_totals(OUT_BYTES, c);
}

static void on_refusing(conn_t *c) {
  if (!c->refuse_shut) {
    int done = flush_pre(c, 1, c->fd);
    if (done < 0) return conn_close(c);
    if (done == 0) return;
    shutdown(c->fd, SHUT_WR);
    c->refuse_shut = 1;
  }
  char drop[4096];
  for (int rounds = 0; rounds < 16; rounds++) {
    ssize_t n = recv(c->fd, drop, sizeof drop, 0);
    if (n > 0) continue;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    return conn_close(c); /* the program hung up */
  }
}

/* Something happened on fd j of c (0: the program's side, 1: the upstream). */
static void conn_event(conn_t *c, int j, short revents) {
  int hangup = j == 0 && (revents & (POLLHUP | POLLERR));
  switch (c->state) {
  case S_HEADER: on_header(c); break;
  case S_HEAD: on_head(c); break;
  case S_DECIDING:
    if (hangup) conn_close(c);
    break;
  case S_CONNECTING:
    if (hangup) conn_close(c);
    else on_connecting(c);
    break;
  case S_RELAYING:
    on_relaying(c);
    /* The program's side is shut both ways: once what it sent is delivered, nothing more can reach it. */
    if (hangup && c->fd >= 0 && !c->r.rd[0] && c->r.held[0] == 0) conn_close(c);
    break;
  case S_REFUSING: on_refusing(c); break;
  }
}

/* Takes on a connection the listener accepted (fd, non-blocking): refused when the table is full, else read. */
static void conn_open(int fd) {
  if (nconns >= MAX_CONNECTIONS) {
    close(fd);
    refused_count++;
    counts_dirty = 1;
    return;
  }
  if (unidentified >= MAX_UNIDENTIFIED) {
    conn_t *oldest = NULL;
    for (size_t i = 0; i < nconns; i++)
      if (conns[i]->fd >= 0 && conns[i]->state == S_HEADER && (!oldest || conns[i]->seq < oldest->seq))
        oldest = conns[i];
    if (oldest) conn_refuse_unseen(oldest);
  }
  int size = 4 * 1024 * 1024; /* more in flight towards the agent per wake-up (capped at net.core.wmem_max) */
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  conn_t *c = calloc(1, sizeof *c);
  if (!c) die("out of memory");
  while (find_conn(next_id) || next_id == 0) next_id++;
  c->id = next_id++;
  c->fd = fd;
  c->up = -1;
  c->seq = next_seq++;
  c->state = S_HEADER;
  c->deadline = now_ms() + HEADER_TIMEOUT_MS;
  if (nconns == conns_cap) {
    conns_cap = conns_cap ? conns_cap * 2 : 64;
    conns = xrealloc(conns, conns_cap * sizeof *conns);
  }
  conns[nconns++] = c;
  unidentified++;
  counts_dirty = 1;
  on_header(c); /* the agent writes its header as it connects */
}

static void accept_connections(void) {
  for (int rounds = 0; rounds < 64; rounds++) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      /* out of fds: the pending connection stays queued; poll would report it at once, so rest a little */
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) accept_after = now_ms() + 100;
      return;
    }
    conn_open(fd);
  }
}

/* ------------------------------------------------------------------ the parent's commands */

static int parse_connect(conn_t *c, const unsigned char *p, size_t len) {
  if (len < 4 + 8 + 2 + 1 + 1) return -1;
  c->timeout_ms = get_u32(p);
  c->limit = (uint64_t)get_u32(p + 4) << 32 | get_u32(p + 8);
  uint16_t port = (uint16_t)(p[12] << 8 | p[13]);
  c->want_status = p[14] & 1;
  unsigned count = p[15];
  size_t off = 16;
  if (count == 0 || count > MAX_ADDRESSES || len < off + count * 17u + 4) return -1;
  for (unsigned k = 0; k < count; k++, off += 17) {
    const unsigned char *a = p + off;
    memset(&c->addr[k], 0, sizeof c->addr[k]);
    if (a[0] == 4) {
      struct sockaddr_in *sin = (struct sockaddr_in *)&c->addr[k];
      sin->sin_family = AF_INET;
      sin->sin_port = htons(port);
      memcpy(&sin->sin_addr, a + 1, 4);
      c->addr_len[k] = sizeof *sin;
    } else if (a[0] == 6) {
      struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&c->addr[k];
      sin6->sin6_family = AF_INET6;
      sin6->sin6_port = htons(port);
      memcpy(&sin6->sin6_addr, a + 1, 16);
      c->addr_len[k] = sizeof *sin6;
    } else {
      return -1;
    }
  }
  c->naddr = count;
  c->next = 0;
  uint32_t prelude = get_u32(p + off);
  off += 4;
  if (prelude > len - off) return -1;
  /* pre[1]: the prelude for the program; pre[0]: the bytes for the upstream, then what followed the head */
  size_t upstream = len - off - prelude;
  c->pre[1] = prelude ? xrealloc(NULL, prelude) : NULL;
  if (prelude) memcpy(c->pre[1], p + off, prelude);
  c->pre_len[1] = prelude;
  c->pre_len[0] = upstream + c->len;
  c->pre[0] = c->pre_len[0] ? xrealloc(NULL, c->pre_len[0]) : NULL;
  if (upstream) memcpy(c->pre[0], p + off + prelude, upstream);
  if (c->len) memcpy(c->pre[0] + upstream, c->buf, c->len);
  free(c->buf);
  c->buf = NULL;
  c->len = c->cap = 0;
  return 0;
}

static int handle_command(unsigned type, uint32_t id, const unsigned char *p, size_t len) {
  if (type == IN_ADMIT) {
    if (len == 0 || len > MAX_TOKEN || id == 0) return -1;
    for (size_t k = 0; k < len; k++)
      if (p[k] <= 0x20 || p[k] >= 0x7f) return -1;
    if (nadmissions == admissions_cap) {
      admissions_cap = admissions_cap ? admissions_cap * 2 : 16;
      admissions = xrealloc(admissions, admissions_cap * sizeof *admissions);
    }
    admission_t *a = &admissions[nadmissions++];
    a->id = id;
    a->len = len;
    memcpy(a->token, p, len);
    return 0;
  }
  if (type == IN_REVOKE) {
    for (size_t i = 0; i < nadmissions; i++) {
      if (admissions[i].id == id) {
        admissions[i] = admissions[--nadmissions];
        break;
      }
    }
    return 0;
  }
  if (type == IN_LISTEN) {
    if (listen_asked || id != 0 || len != 0) return -1;
    listen_asked = 1;
    return 0;
  }
  if (type < IN_ADMIT || type > IN_CLOSE) return -1;
  conn_t *c = find_conn(id);
  if (!c || c->state == S_HEADER) return 0; /* closed meanwhile */
  if (type == IN_CLOSE) {
    conn_close(c);
  } else if (c->state != S_DECIDING) {
    fprintf(stderr, "pai-egress-relay: command 0x%02x for connection %u, which is not waiting for one\n", type, id);
  } else if (type == IN_REFUSE) {
    free_pre(c);
    c->pre[1] = len ? xrealloc(NULL, len) : NULL;
    if (len) memcpy(c->pre[1], p, len);
    c->pre_len[1] = len;
    c->state = S_REFUSING;
    on_refusing(c);
  } else {
    free_pre(c);
    if (parse_connect(c, p, len)) return -1;
    connect_next(c, ECONNABORTED);
  }
  return 0;
}

/* Reads and runs the parent's commands; -1 (and parent_gone) when it is gone or spoke nonsense. */
static int read_parent(void) {
  if (parent_gone) return -1;
  for (;;) {
    ssize_t n = read(0, in + in_len, HDR + MAX_CONTROL_PAYLOAD - in_len);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      parent_gone = 1;
      return -1;
    }
    if (n < 0) return 0;
    in_len += (size_t)n;
    size_t off = 0;
    while (in_len - off >= HDR) {
      uint32_t len = get_u32(in + off);
      if (len > MAX_CONTROL_PAYLOAD) return -1;
      if (in_len - off < HDR + len) break;
      if (handle_command(in[off + 4], get_u32(in + off + 5), in + off + HDR, len)) {
        fprintf(stderr, "pai-egress-relay: bad command 0x%02x from the parent\n", in[off + 4]);
        parent_gone = 1;
        return -1;
      }
      off += HDR + len;
    }
    memmove(in, in + off, in_len - off);
    in_len -= off;
  }
}

/* ------------------------------------------------------------------ main */

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static short conn_events(conn_t *c, int j) {
  switch (c->state) {
  case S_HEADER:
  case S_HEAD: return j == 0 ? POLLIN : 0;
  case S_DECIDING: return 0; /* still told of a hang-up */
  case S_CONNECTING: return j == 1 ? POLLOUT : 0;
  case S_REFUSING: return j == 0 ? (c->refuse_shut ? POLLIN : POLLOUT) : 0;
  case S_RELAYING: {
    /* fd j is written by direction 1 - j: its prelude first, then its pipe */
    short ev = c->pre_off[1 - j] < c->pre_len[1 - j] ? POLLOUT : 0;
    if (c->pre_off[j] < c->pre_len[j]) return ev; /* direction j starts once its prelude is out */
    return (short)(ev | relay_events(&c->r, j));
  }
  }
  return 0;
}

/* The system calls of the relay's loop (and its libc's: memory, time, stderr), once it listens. */
static const long RELAY_SYSCALLS[] = {
  SYS_read, SYS_write, SYS_writev, SYS_recvfrom, SYS_sendto, SYS_splice, SYS_pipe2, SYS_fcntl, SYS_close,
  SYS_socket, SYS_connect, SYS_accept4, SYS_setsockopt, SYS_getsockopt, SYS_getsockname, SYS_getpeername,
  SYS_shutdown, SYS_ppoll, SYS_mmap, SYS_munmap, SYS_mremap, SYS_brk, SYS_madvise, SYS_clock_gettime,
  SYS_gettimeofday, SYS_rt_sigreturn, SYS_rt_sigprocmask, SYS_restart_syscall, SYS_futex, SYS_getrandom,
  SYS_unlinkat, SYS_exit, SYS_exit_group,
#ifdef SYS_poll
  SYS_poll,
#endif
#ifdef SYS_unlink
  SYS_unlink,
#endif
};

/* Drops what the relay no longer needs once it listens (see the top): `user` is argv[2] or NULL. */
static void drop_privileges(const char *user, int with_seccomp) {
  unsigned long uid = 65534, gid = 65534;
  int keep = user && strcmp(user, "-") == 0;
  if (user && !keep) {
    char *end;
    uid = strtoul(user, &end, 10);
    if (end == user || *end != ':') die("UID:GID expected");
    const char *g = end + 1;
    gid = strtoul(g, &end, 10);
    if (end == g || *end) die("UID:GID expected");
  }
  if (!keep && lp_drop_to((uid_t)uid, (gid_t)gid)) die("dropping privileges");
  if (with_seccomp && lp_restrict_syscalls(RELAY_SYSCALLS, sizeof RELAY_SYSCALLS / sizeof *RELAY_SYSCALLS))
    die("seccomp filter");
}

int main(int argc, char **argv) {
  int with_seccomp = !(argc == 4 && strcmp(argv[3], "--without-seccomp") == 0);
  if (argc < 2 || argc > 4 || (argc == 4 && with_seccomp) ||
      strlen(argv[1]) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    fprintf(stderr,
            "usage: pai-egress-relay SOCKET_PATH [UID:GID | - [--without-seccomp]] (stdin/stdout: the parent's control channel)\n");
    return 64;
  }
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* tokens live in this process */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  if (fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK) || fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK))
    die("fcntl O_NONBLOCK on stdin/stdout");
  in = xrealloc(NULL, HDR + MAX_CONTROL_PAYLOAD);
  while (!listen_asked) { /* the admissions first (see above) */
    struct pollfd parent = {.fd = 0, .events = POLLIN};
    if (stopping) return 0;
    if (poll(&parent, 1, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (read_parent()) return 0;
  }

  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, argv[1], strlen(argv[1]));
  listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd < 0) die("socket");
  unlink(argv[1]);
  mode_t old = umask(0111); /* srw-rw-rw-: a container's user must be able to connect; the token admits */
  if (bind(listen_fd, (struct sockaddr *)&addr, sizeof addr)) die(argv[1]);
  umask(old);
  socket_path = argv[1];
  if (chmod(argv[1], 0666) || listen(listen_fd, 512)) die(argv[1]);
  drop_privileges(argc >= 3 ? argv[2] : NULL, with_seccomp);
  send_frame(OUT_READY, 0, RELAY_VERSION, sizeof RELAY_VERSION - 1);

  struct pollfd *pfds = NULL;
  size_t *pmap = NULL, pcap = 0;
  while (!stopping) {
    if (counts_dirty) {
      unsigned char p[8];
      put_u32(p, refused_count);
      put_u32(p + 4, unidentified);
      send_frame(OUT_COUNTS, 0, p, sizeof p);
      counts_dirty = 0;
    }
    if (flush_out()) break;
    size_t need = 3 + nconns * 2;
    if (need > pcap) {
      pcap = need * 2;
      pfds = xrealloc(pfds, pcap * sizeof *pfds);
      pmap = xrealloc(pmap, pcap * sizeof *pmap);
    }
    size_t np = 0;
    pfds[np++] = (struct pollfd){.fd = 0, .events = POLLIN};
    pfds[np++] = (struct pollfd){.fd = out_len ? 1 : -1, .events = POLLOUT};
    uint64_t now = now_ms(), wake = accept_after > now ? accept_after : UINT64_MAX;
    pfds[np++] = (struct pollfd){.fd = accept_after > now ? -1 : listen_fd, .events = POLLIN};
    for (size_t i = 0; i < nconns; i++) {
      conn_t *c = conns[i];
      if (c->fd < 0) continue;
      if ((c->state == S_HEADER || c->state == S_CONNECTING) && c->deadline < wake) wake = c->deadline;
      for (int j = 0; j < 2; j++) {
        int fd = c->relaying ? c->r.fd[j] : j == 0 ? c->fd : c->up;
        if (fd < 0) continue;
        short ev = conn_events(c, j);
        /* the program's side is always watched, for its hang-up */
        if (!ev && j == 1) continue;
        pmap[np] = i * 2 + (size_t)j;
        pfds[np++] = (struct pollfd){.fd = fd, .events = ev};
      }
    }
    int timeout = wake == UINT64_MAX ? -1 : wake <= now ? 0 : (int)(wake - now < 60000 ? wake - now : 60000);
    int r = poll(pfds, np, timeout);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    for (size_t k = 3; k < np; k++) {
      if (!pfds[k].revents) continue;
      conn_t *c = conns[pmap[k] / 2];
      if (c->fd >= 0) conn_event(c, (int)(pmap[k] % 2), pfds[k].revents);
    }
    now = now_ms();
    for (size_t i = 0; i < nconns; i++) {
      conn_t *c = conns[i];
      if (c->fd < 0 || c->deadline > now) continue;
      if (c->state == S_HEADER) {
        conn_refuse_unseen(c);
      } else if (c->state == S_CONNECTING) {
        relay_close_fd(&c->up);
        connect_next(c, ETIMEDOUT);
      }
    }
    if ((pfds[0].revents && read_parent()) || parent_gone) break;
    if (pfds[2].revents) accept_connections(); /* after the parent's commands: an admitted token is known */
    remove_closed();
  }
  unlink(socket_path);
  return 0;
}
