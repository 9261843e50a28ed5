/*
 * pai-agent — PAI's in-container agent.
 *
 * A small static program (built by ./build.sh for x86_64 and aarch64) that runs inside a container (a sandbox or a
 * browser) and serves the host over ONE long-lived byte stream: its own stdin (host -> agent) and stdout
 * (agent -> host), the stdio of a `docker exec` session. Nothing but frames is ever written to stdout;
 * diagnostics go to stderr. That one stream carries everything between host and container: commands (on pipes, or
 * on a pseudo-terminal: a shell for a person), small file operations, a command's extra pipe (Chromium's
 * --remote-debugging-pipe), the TCP connections accepted on a loopback listener (the egress proxy's tunnel) and
 * those the host opens to a loopback port with CONNECT (previews of a server in the container), so nothing needs
 * a network.
 *
 * Frame (both directions): u32 BE payload length | u8 type | u32 BE request id | payload.
 * Payloads are at most MAX_PAYLOAD bytes. See ../README.md for the frame table.
 *
 * Usage: pai-agent [--user UID:GID | --user self]
 *        pai-agent --dial
 *        pai-agent --idle
 *   --user  the user requests run as when they name none. Default: 1000:1000 when the agent runs as
 *           root, the agent's own user otherwise.
 *   --dial  the container's main process: connect to the host's unix socket named by $PAI_AGENT_DIAL (a
 *           read-only mount of a host directory) and say `PAI-AGENT/1 $PAI_AGENT_TOKEN` on the first line;
 *           then a child serves that connection instead of stdin/stdout (so the host needs no `docker exec`)
 *           while this process idles as with --idle (renamed `pai-idle`): the container outlives its first
 *           agent, and the next one is started with `docker exec`. Without a connection it only idles. The
 *           host admits each token once.
 *   --idle  do nothing until SIGTERM/SIGINT/SIGHUP, reaping children: a container main process for images
 *           without `sleep` (the agent itself is then started with `docker exec`).
 *
 * Design notes:
 *  - One poll() loop over the host stream, a signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP), every command's
 *    pipes, the listener and every accepted connection. All fds are non-blocking; nothing blocks on a slow
 *    host: when the outgoing buffer is large the agent stops reading the commands' pipes and connections
 *    (backpressure reaches them as a full pipe or a full socket), and when it is very large it also stops
 *    reading the host.
 *  - Each command runs in its own process group, with stdin/stdout/stderr (and, when asked, fds 3 and 4)
 *    on pipes owned by the agent and every other fd closed, so nothing it runs can write to the agent's
 *    stdout. The agent is also non-dumpable, so a same-uid process cannot open /proc/<agent>/fd/1 or
 *    ptrace it.
 *  - Running as root, a command drops to its uid/gid (setgroups, setgid, setuid) before exec, with an empty
 *    capability bounding set, and file operations run under setfsuid/setfsgid; anything that cannot drop
 *    privileges fails closed. A container whose main process is this agent as root, keeping only CAP_SETUID,
 *    CAP_SETGID, CAP_SETPCAP and CAP_KILL, runs its programs as a user that cannot signal the agent, its parent or
 *    the container's init: `kill -9 -1` or `pkill pai-agent` from a program leaves the container serving.
 *  - The agent is a child subreaper and reaps everything (it may be PID 1). Exits are reported only
 *    for its own commands; orphans are reaped silently.
 *  - When a command's leader exits, the output already in its pipes is forwarded, then EXIT is sent.
 *    Output written later by background descendants is read and discarded (so they do not die of
 *    SIGPIPE); a SIGNAL for the request still reaches the group while any of it holds the pipes.
 *    If the host signalled the command, or asked for it in SPAWN (flag 0x10), the rest of its group is
 *    killed when the leader exits.
 *  - Connections accepted on the listener, and those CONNECT opens, are relayed byte for byte; the agent makes no
 *    decision about them (the host does, see the egress proxy). Both directions are flow-controlled by
 *    acknowledgements, and both kinds count against MAX_STREAMS.
 *  - A command on a terminal (SPAWN_PTY) leads its own session; the agent holds the master, so what a program
 *    writes there is read like a pipe (paused with the others) and when the leader exits the master is closed,
 *    hanging the terminal up. If the host signalled it, every process of its session is killed on exit too.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "splice-relay.h"
#include "wire.h"

#ifndef PAI_AGENT_BUILD
#define PAI_AGENT_BUILD "dev"
#endif
#define AGENT_VERSION "0.2.0+" PAI_AGENT_BUILD
#define PROTOCOL_VERSION 4

#define HDR 9u
#define MAX_PAYLOAD (1024u * 1024u)
#define READ_CHUNK (64u * 1024u)
#define STREAM_READ_CHUNK (256u * 1024u)        /* per read from an accepted connection */
#define OUT_PAUSE_CHILDREN (4u * 1024u * 1024u) /* stop reading command pipes and connections above this */
#define OUT_PAUSE_HOST (16u * 1024u * 1024u)    /* stop reading the host above this */
#define OUT_KEEP (2u * 1024u * 1024u)           /* an outgoing buffer larger than this is freed once drained */
#define SINK_QUEUE_MAX (8u * 1024u * 1024u)     /* per sink; the host keeps a smaller window */
#define STREAM_WINDOW (4u * 1024u * 1024u)      /* unacknowledged STREAM_DATA bytes per connection */
#define MAX_STREAMS 1024u
#define DRAIN_MAX (1024u * 1024u)               /* per stream, when a leader exits */
#define STREAM_ID_BASE 0x80000000u              /* connection ids; host request ids stay below */
#define MAX_TOKEN 128u                          /* the host socket's token */
#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41) /* Linux 4.13 */
#endif

/* host -> agent */
enum {
  T_PING = 0x01, T_SPAWN = 0x02, T_STDIN = 0x03, T_STDIN_EOF = 0x04, T_SIGNAL = 0x05, T_WRITE_FILE = 0x06,
  T_READ_FILE = 0x07, T_PIPE_IN = 0x08, T_LISTEN = 0x09, T_STREAM_DATA = 0x0A, T_STREAM_EOF = 0x0B,
  T_STREAM_CLOSE = 0x0C, T_STREAM_ACK = 0x0D, T_CONNECT = 0x0E, T_RESIZE = 0x0F
};
/* agent -> host */
enum {
  T_HELLO = 0x81, T_PONG = 0x82, T_SPAWNED = 0x83, T_STDOUT = 0x84, T_STDERR = 0x85, T_EXIT = 0x86,
  T_ERROR = 0x87, T_FILE_DATA = 0x88, T_FILE_MISSING = 0x89, T_FILE_WRITTEN = 0x8A, T_STDIN_ACK = 0x8B,
  T_PIPE_OUT = 0x8C, T_PIPE_ACK = 0x8D, T_LISTENING = 0x8E, T_STREAM_OPEN = 0x8F, T_STREAM_DATA_OUT = 0x90,
  T_STREAM_EOF_OUT = 0x91, T_STREAM_CLOSED = 0x92, T_STREAM_ACK_OUT = 0x93, T_CONNECTED = 0x94
};
/* SPAWN flags */
#define SPAWN_STDIN 0x01u
#define SPAWN_HAS_UID 0x02u
#define SPAWN_HAS_GID 0x04u
#define SPAWN_INHERIT_ENV 0x08u
#define SPAWN_KILL_GROUP_ON_EXIT 0x10u
#define SPAWN_PIPE 0x20u /* fd 3: PIPE_IN bytes, fd 4: PIPE_OUT bytes (Chromium's --remote-debugging-pipe) */
#define SPAWN_PTY 0x40u  /* stdin/stdout/stderr on a new pseudo-terminal, the command its session's leader */
/* WRITE_FILE / READ_FILE flags */
#define FILE_HAS_UID 0x01u
#define FILE_HAS_GID 0x02u
#define FILE_HAS_MODE 0x04u
#define FILE_CHECK_ONLY 0x08u

extern char **environ;

/* ------------------------------------------------------------------ byte buffers */

typedef struct {
  unsigned char *data;
  size_t start, len, cap; /* live bytes are data[start, start + len) */
} buf_t;

static void die(const char *what) {
  fprintf(stderr, "pai-agent: fatal: %s: %s\n", what, strerror(errno));
  _exit(70);
}

/* Makes room for n more bytes at the end and returns a pointer to it (not committed). */
static unsigned char *buf_reserve(buf_t *b, size_t n) {
  if (b->start > 0 && (b->len == 0 || b->start + b->len + n > b->cap)) {
    if (b->len > 0) memmove(b->data, b->data + b->start, b->len);
    b->start = 0;
  }
  if (b->start + b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 64 * 1024;
    while (cap < b->len + n) cap *= 2;
    unsigned char *data = realloc(b->data, cap);
    if (!data) die("out of memory");
    b->data = data;
    b->cap = cap;
  }
  return b->data + b->start + b->len;
}

static void buf_consume(buf_t *b, size_t n) {
  b->start += n;
  b->len -= n;
  if (b->len == 0) b->start = 0;
}

static void buf_free(buf_t *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------------------ state */

/* Bytes from the host on their way into an fd (a command's stdin or fd 3, a connection), acknowledged. */
typedef struct {
  int fd;          /* -1 when closed */
  buf_t q;         /* bytes not yet written */
  int eof_pending; /* end the fd once q is empty */
  uint32_t ack;    /* bytes consumed (written or dropped) since the last acknowledgement */
} sink_t;

typedef struct {
  uint32_t id;
  pid_t pid;
  sink_t in;                  /* stdin */
  sink_t pin;                 /* fd 3 (SPAWN_PIPE) */
  int out_fd, err_fd, pout_fd; /* stdout, stderr, fd 4; -1 when closed */
  int pty;                    /* SPAWN_PTY: out_fd and in.fd are the terminal's master (two fds), err_fd is -1 */
  int exited;                 /* leader reaped and EXIT sent; pipes are drained and discarded */
  int signalled;              /* the host sent a signal: kill the rest of the group on exit */
} cmd_t;

/*
 * A TCP connection relayed in frames: one the listener accepted (id from STREAM_ID_BASE, announced by STREAM_OPEN)
 * or one the host asked for with CONNECT (the request's id, announced by CONNECTED). Both are the same thing from
 * then on: the same frames, the same window.
 */
/* Where a relayed connection goes: a host unix socket (through a read-only mount), and the line that opens it. */
typedef struct {
  struct sockaddr_un sock; /* sock.sun_path[0] == 0: none */
  char header[MAX_TOKEN + 32];
  size_t header_len;
} host_target_t;

typedef struct {
  uint32_t id;
  sink_t in;         /* host -> connection; in.fd is the socket */
  int connecting;    /* a CONNECT whose non-blocking connect has not completed yet */
  host_target_t *target; /* a CONNECT that dials back: once connected, relayed there instead (see do_connect) */
  int rd_open;       /* still reading the connection */
  int wr_open;       /* still writing to it (not shut down) */
  uint32_t unacked;  /* STREAM_DATA bytes the host has not acknowledged */
} stream_t;


static buf_t out;             /* frames waiting for the host */
static unsigned char *inbuf;  /* frames from the host */
static size_t in_len, in_cap;
static int host_eof;
static cmd_t **cmds;
static size_t ncmds, cmds_cap;
static stream_t **streams;
static size_t nstreams, streams_cap;
static uint32_t next_stream_id = STREAM_ID_BASE;
static int listen_fd = -1;
static relay_t **relays;
static size_t nrelays, relays_cap;
/* The host's egress socket and its header (LISTEN with a socket path). */
static host_target_t egress_target;
static int egress_target_warned;
static uid_t self_uid, default_uid;
static gid_t self_gid, default_gid;
static int is_root;
static rlim_t child_nofile_soft;

/* ------------------------------------------------------------------ frames out */

static unsigned char *frame_begin(unsigned type, uint32_t id, size_t payload_len) {
  unsigned char *p = buf_reserve(&out, HDR + payload_len);
  put_u32(p, (uint32_t)payload_len);
  p[4] = (unsigned char)type;
  put_u32(p + 5, id);
  out.len += HDR + payload_len;
  return p + HDR;
}

static void send_frame(unsigned type, uint32_t id, const void *payload, size_t len) {
  unsigned char *p = frame_begin(type, id, len);
  if (len) memcpy(p, payload, len);
}

static void send_u32(unsigned type, uint32_t id, uint32_t v) {
  put_u32(frame_begin(type, id, 4), v);
}

/* ERROR payload: u32 errno (0 when none) | UTF-8 message */
static void send_error(uint32_t id, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void send_error(uint32_t id, int err, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
  unsigned char *p = frame_begin(T_ERROR, id, 4 + (size_t)n);
  put_u32(p, (uint32_t)err);
  memcpy(p + 4, msg, (size_t)n);
}

/* Writes as much of the outgoing buffer as the host takes without blocking. */
static int flush_out(void) {
  while (out.len > 0) {
    ssize_t n = write(1, out.data + out.start, out.len);
    if (n > 0) {
      buf_consume(&out, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -1; /* EPIPE or worse: the host is gone */
  }
  if (out.cap > OUT_KEEP) buf_free(&out); /* give a burst's memory back */
  return 0;
}

/* Reads once from fd into a frame of `type` for `id`, at most `chunk` bytes: bytes read, 0 (again), -1 (EOF), -2 (error). */
static int read_frame(int fd, unsigned type, uint32_t id, size_t chunk) {
  unsigned char *p = buf_reserve(&out, HDR + chunk);
  ssize_t n = read(fd, p + HDR, chunk);
  if (n > 0) {
    put_u32(p, (uint32_t)n);
    p[4] = (unsigned char)type;
    put_u32(p + 5, id);
    out.len += HDR + (size_t)n;
    return (int)n;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  return n == 0 ? -1 : -2;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* ------------------------------------------------------------------ sinks */

static void sink_init(sink_t *s, int fd) {
  memset(s, 0, sizeof *s);
  s->fd = fd;
}

/* Drops what is queued (it still counts as consumed) and forgets the fd; the caller closes or keeps it. */
static void sink_drop(sink_t *s) {
  s->ack += (uint32_t)s->q.len;
  buf_free(&s->q);
  s->eof_pending = 0;
}

/*
 * Writes what is queued. 0: nothing more to do now, 1: drained with EOF pending (the caller ends the fd),
 * -1: the fd failed (EPIPE: the reader is gone).
 */
static int sink_pump(sink_t *s) {
  while (s->fd >= 0 && s->q.len > 0) {
    ssize_t n = write(s->fd, s->q.data + s->q.start, s->q.len);
    if (n > 0) {
      buf_consume(&s->q, (size_t)n);
      s->ack += (uint32_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    return -1;
  }
  if (s->q.len == 0 && s->q.cap > OUT_KEEP) buf_free(&s->q);
  return s->fd >= 0 && s->q.len == 0 && s->eof_pending ? 1 : 0;
}

/* Takes bytes from the host: written at once when nothing is queued, queued otherwise. -1 when over the cap. */
static int sink_push(sink_t *s, const unsigned char *p, size_t len) {
  if (s->fd < 0 || s->eof_pending) {
    s->ack += (uint32_t)len; /* nobody reads it: drop, but free the window */
    return 0;
  }
  if (s->q.len + len > SINK_QUEUE_MAX) return -1;
  if (s->q.len == 0) {
    while (len > 0) {
      ssize_t n = write(s->fd, p, len);
      if (n > 0) {
        p += n;
        len -= (size_t)n;
        s->ack += (uint32_t)n;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break; /* EAGAIN: queue the rest; an error shows at the next pump */
    }
    if (len == 0) return 0;
  }
  memcpy(buf_reserve(&s->q, len), p, len);
  s->q.len += len;
  return 0;
}

/* ------------------------------------------------------------------ commands */

static cmd_t *find_cmd(uint32_t id) {
  for (size_t i = 0; i < ncmds; i++)
    if (cmds[i]->id == id) return cmds[i];
  return NULL;
}

static cmd_t *find_pid(pid_t pid) {
  for (size_t i = 0; i < ncmds; i++)
    if (cmds[i]->pid == pid && !cmds[i]->exited) return cmds[i];
  return NULL;
}

/* Closes a command's stdin or fd 3, dropping what is queued. */
static void close_sink(sink_t *s) {
  close_fd(&s->fd);
  sink_drop(s);
}

static void pump_sink(sink_t *s) {
  if (sink_pump(s) != 0) close_sink(s); /* drained with EOF pending, or the command closed its end */
}

/* Reads once from a command's stdout/stderr/fd 4 into a frame (or discards after exit). 1 = more may follow. */
static int pump_output(cmd_t *c, int *fd, unsigned type) {
  if (c->exited) {
    static unsigned char discard[READ_CHUNK];
    ssize_t n = read(*fd, discard, sizeof discard);
    if (n > 0) return 1;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    close_fd(fd);
    return 0;
  }
  int r = read_frame(*fd, type, c->id, READ_CHUNK);
  if (r < 0) close_fd(fd); /* EOF or error */
  return r > 0;
}

static void send_acks(cmd_t *c) {
  if (c->in.ack) {
    send_u32(T_STDIN_ACK, c->id, c->in.ack);
    c->in.ack = 0;
  }
  if (c->pin.ack) {
    send_u32(T_PIPE_ACK, c->id, c->pin.ack);
    c->pin.ack = 0;
  }
}

/*
 * SIGKILLs every process of session `sid` (a PTY command's: its jobs have process groups of their own), a few
 * rounds over /proc in case one forks meanwhile. Processes that made a session of their own escape, as with groups.
 */
static void kill_session(pid_t sid) {
  for (int round = 0; round < 4; round++) {
    DIR *proc = opendir("/proc");
    if (!proc) return;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(proc))) {
      char *end;
      long pid = strtol(e->d_name, &end, 10);
      if (*end || pid <= 1 || pid == getpid()) continue;
      if (getsid((pid_t)pid) == sid && kill((pid_t)pid, SIGKILL) == 0) found = 1;
    }
    closedir(proc);
    if (!found) return;
  }
}

static void on_exit_status(cmd_t *c, int status) {
  /* The leader has exited, so everything it wrote is already in the pipes: forward it first. */
  int *fds[3] = {&c->out_fd, &c->err_fd, &c->pout_fd};
  unsigned types[3] = {T_STDOUT, T_STDERR, T_PIPE_OUT};
  for (int k = 0; k < 3; k++) {
    size_t drained = 0;
    while (*fds[k] >= 0 && drained < DRAIN_MAX && pump_output(c, fds[k], types[k])) drained += READ_CHUNK;
  }
  send_acks(c);
  unsigned char *p = frame_begin(T_EXIT, c->id, 5);
  if (WIFSIGNALED(status)) {
    p[0] = 1;
    put_u32(p + 1, (uint32_t)WTERMSIG(status));
  } else {
    p[0] = 0;
    put_u32(p + 1, (uint32_t)WEXITSTATUS(status));
  }
  c->exited = 1;
  close_sink(&c->in);
  close_sink(&c->pin);
  c->in.ack = c->pin.ack = 0;
  /* Repeat a few times: a member may be between fork and its child joining the signal's view. */
  if (c->signalled)
    for (int i = 0; i < 16 && kill(-c->pid, SIGKILL) == 0; i++) {
    }
  if (c->pty) {
    /* The session is over: closing the master hangs the terminal up for whatever still holds it. */
    close_fd(&c->out_fd);
    if (c->signalled) kill_session(c->pid);
  }
}

static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      if (pid < 0 && errno == EINTR) continue;
      return;
    }
    if (!WIFEXITED(status) && !WIFSIGNALED(status)) continue;
    cmd_t *c = find_pid(pid);
    if (c) on_exit_status(c, status);
  }
}

static void remove_finished(void) {
  for (size_t i = 0; i < ncmds;) {
    cmd_t *c = cmds[i];
    if (c->exited && c->out_fd < 0 && c->err_fd < 0 && c->pout_fd < 0) {
      close_sink(&c->in);
      close_sink(&c->pin);
      free(c);
      cmds[i] = cmds[--ncmds];
    } else {
      i++;
    }
  }
}

static void kill_all(void) {
  for (size_t i = 0; i < ncmds; i++) kill(-cmds[i]->pid, SIGKILL);
}

/* ------------------------------------------------------------------ connections (the egress tunnel) */

/* The live connection with this id (a closed one waits in the table until the end of the round). */
static stream_t *find_stream(uint32_t id) {
  for (size_t i = 0; i < nstreams; i++)
    if (streams[i]->id == id && streams[i]->in.fd >= 0) return streams[i];
  return NULL;
}

/* Ends a connection: closes its socket and tells the host (STREAM_CLOSED is the last frame of an id). */
static void stream_close(stream_t *s) {
  if (s->in.fd < 0) return;
  close_fd(&s->in.fd);
  buf_free(&s->in.q);
  s->in.ack = 0;
  s->rd_open = s->wr_open = 0;
  send_frame(T_STREAM_CLOSED, s->id, NULL, 0);
}

/* A CONNECT that failed: ERROR (not STREAM_CLOSED) is the last frame of its id. */
static void stream_connect_failed(stream_t *s, int err) {
  close_fd(&s->in.fd);
  s->connecting = 0;
  send_error(s->id, err, "connect to 127.0.0.1: %s", strerror(err));
}

/* The connection is up: from now on its bytes flow both ways. */
static void stream_connected(stream_t *s) {
  s->connecting = 0;
  s->rd_open = s->wr_open = 1;
}

static int relay_open(int fd, const host_target_t *t);

/*
 * A CONNECT's connection is up: CONNECTED, and its bytes flow in frames; or, dialling back, they flow through a relay
 * to the host socket and CONNECTED is the id's last frame (ERROR when that socket cannot be reached).
 */
static void stream_connect_done(stream_t *s) {
  if (!s->target) {
    stream_connected(s);
    send_frame(T_CONNECTED, s->id, NULL, 0);
    return;
  }
  s->connecting = 0;
  if (relay_open(s->in.fd, s->target)) {
    int e = errno;
    close_fd(&s->in.fd);
    send_error(s->id, e, "host socket %s: %s", s->target->sock.sun_path, strerror(e));
    return;
  }
  s->in.fd = -1; /* the relay's now; the id is done */
  send_frame(T_CONNECTED, s->id, NULL, 0);
}

static void stream_check_done(stream_t *s) {
  if (!s->rd_open && !s->wr_open) stream_close(s);
}

static void stream_pump(stream_t *s) {
  if (s->in.fd < 0) return;
  if (s->connecting) { /* writable: the non-blocking connect has completed, one way or the other */
    int err = 0;
    socklen_t elen = sizeof err;
    if (getsockopt(s->in.fd, SOL_SOCKET, SO_ERROR, &err, &elen)) err = errno;
    if (err == EINPROGRESS || err == EALREADY) return;
    if (err && err != ECONNRESET) {
      stream_connect_failed(s, err);
      return;
    }
    stream_connect_done(s);
    /* ECONNRESET: it was connected, and the server reset it at once (a relayed one ends by itself) */
    if (err && s->in.fd >= 0) stream_close(s);
    return;
  }
  int r = sink_pump(&s->in);
  if (r < 0) {
    stream_close(s);
  } else if (r == 1) {
    shutdown(s->in.fd, SHUT_WR);
    s->in.eof_pending = 0;
    s->wr_open = 0;
    stream_check_done(s);
  }
}

static void stream_read(stream_t *s) {
  int r = read_frame(s->in.fd, T_STREAM_DATA_OUT, s->id, STREAM_READ_CHUNK);
  if (r > 0) {
    s->unacked += (uint32_t)r;
  } else if (r == -2) {
    stream_close(s); /* reset by the peer */
  } else if (r == -1) {
    s->rd_open = 0;
    send_frame(T_STREAM_EOF_OUT, s->id, NULL, 0);
    stream_check_done(s);
  }
}

/* ------------------------------------------------------------------ relays (the fast channel) */

static void relay_event(relay_t *r) {
  if (r->fd[0] < 0) return;
  if (relay_pump(r, 0) || relay_pump(r, 1)) relay_close(r);
}

/*
 * Relays a TCP connection in the container (one the listener accepted, or one a CONNECT made) to a host socket:
 * connects, sends the target's header line and then moves bytes both ways. 0 when relayed (fd is taken); -1 with
 * errno set when the host socket cannot be reached (fd is left to the caller).
 */
static int relay_open(int fd, const host_target_t *t) {
  int hs = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (hs < 0) return -1;
  int size = 4 * 1024 * 1024; /* more in flight towards the host per wake-up (capped at net.core.wmem_max) */
  setsockopt(hs, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  ssize_t w = -1;
  if (connect(hs, (const struct sockaddr *)&t->sock, sizeof t->sock) == 0) {
    w = write(hs, t->header, t->header_len);
    if (w >= 0 && w != (ssize_t)t->header_len) errno = EAGAIN; /* a fresh socket's buffer holds a line */
  }
  if (w != (ssize_t)t->header_len) {
    int e = errno;
    close(hs);
    errno = e;
    return -1;
  }
  relay_t *r = calloc(1, sizeof *r);
  if (!r) die("out of memory");
  /* direction 1 (host -> program) copies: the program's TCP connection reads big fragments faster */
  if (relay_init(r, fd, hs, RELAY_UNCAPPED, 1u << 1)) {
    int e = errno;
    free(r);
    close(hs);
    errno = e;
    return -1;
  }
  if (nrelays == relays_cap) {
    relays_cap = relays_cap ? relays_cap * 2 : 16;
    relays = realloc(relays, relays_cap * sizeof *relays);
    if (!relays) die("out of memory");
  }
  relays[nrelays++] = r;
  relay_event(r); /* the program may have written already */
  return 0;
}

static void remove_closed_relays(void) {
  for (size_t i = 0; i < nrelays;) {
    if (relays[i]->fd[0] < 0) {
      free(relays[i]);
      relays[i] = relays[--nrelays];
    } else {
      i++;
    }
  }
}

/* A new connection in the table, not yet flowing (see stream_connected). */
static stream_t *stream_add(uint32_t id, int fd) {
  stream_t *s = calloc(1, sizeof *s);
  if (!s) die("out of memory");
  s->id = id;
  sink_init(&s->in, fd);
  if (nstreams == streams_cap) {
    streams_cap = streams_cap ? streams_cap * 2 : 16;
    streams = realloc(streams, streams_cap * sizeof *streams);
    if (!streams) die("out of memory");
  }
  streams[nstreams++] = s;
  return s;
}

static void accept_streams(void) {
  for (int rounds = 0; rounds < 16; rounds++) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return; /* EAGAIN, or out of fds: try again later */
    }
    if (nstreams + nrelays >= MAX_STREAMS) {
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* relayed bytes go out as they come */
    if (egress_target.sock.sun_path[0]) {
      if (relay_open(fd, &egress_target) == 0) continue;
      if (!egress_target_warned++)
        fprintf(stderr, "pai-agent: egress socket %s: %s; tunnelling over the host stream\n",
                egress_target.sock.sun_path, strerror(errno));
    }
    while (find_stream(next_stream_id)) next_stream_id = next_stream_id == UINT32_MAX ? STREAM_ID_BASE : next_stream_id + 1;
    stream_t *s = stream_add(next_stream_id, fd);
    next_stream_id = next_stream_id == UINT32_MAX ? STREAM_ID_BASE : next_stream_id + 1;
    stream_connected(s);
    send_frame(T_STREAM_OPEN, s->id, NULL, 0);
  }
}

/*
 * Reads `socket path\0 | token` (the tail of LISTEN and CONNECT) into t, the header being `<greeting> <token>\n`.
 * 0 when well formed: an absolute path that fits sun_path, a token of 1-MAX_TOKEN printable bytes without spaces.
 */
static int take_host_target(const unsigned char *p, size_t len, const char *greeting, host_target_t *t) {
  memset(t, 0, sizeof *t);
  t->sock.sun_family = AF_UNIX;
  const unsigned char *z = memchr(p, 0, len);
  if (!z) return -1;
  size_t path_len = (size_t)(z - p), token_len = len - path_len - 1;
  int ok = path_len > 0 && path_len < sizeof t->sock.sun_path && token_len > 0 && token_len <= MAX_TOKEN;
  for (size_t k = 0; ok && k < token_len; k++) ok = z[1 + k] > 0x20 && z[1 + k] < 0x7f;
  if (!ok) return -1;
  memcpy(t->sock.sun_path, p, path_len);
  t->header_len = (size_t)snprintf(t->header, sizeof t->header, "%s %.*s\n", greeting, (int)token_len, (const char *)z + 1);
  return 0;
}

/*
 * CONNECT payload: u16 port (1-65535) [| socket path\0 | token]. Connects to 127.0.0.1:port inside the container, without blocking; answers
 * CONNECTED, after which the request id is a connection like an accepted one (STREAM_* frames both ways, the same
 * window), or ERROR with the errno (ECONNREFUSED: nothing listens there). Frames the host sends for the id before
 * CONNECTED are ignored, except STREAM_CLOSE, which abandons the connect (STREAM_CLOSED then ends the id).
 * With a socket path (the host's dial socket, through the read-only mount) the connection dials back: once it is
 * up the agent connects to that socket, writes `PAI-AGENT/1 <token>\n` and relays the two sockets as a listener's
 * relayed connection is relayed; CONNECTED is then the id's last frame, and none of the connection's bytes pass
 * through the frames. ERROR when either connect fails.
 */
/* Reads a CONNECT request (above) into *port and, when it names a socket, *target: 0, or -1 when malformed. */
static int parse_connect(uint32_t id, const unsigned char *p, size_t len, unsigned *port, host_target_t *target) {
  *port = len >= 2 ? (unsigned)((p[0] << 8) | p[1]) : 0;
  if (*port == 0 || id == 0 || id >= STREAM_ID_BASE ||
      (len > 2 && take_host_target(p + 2, len - 2, "PAI-AGENT/1", target)))
    return -1;
  return 0;
}

static void do_connect(uint32_t id, const unsigned char *p, size_t len) {
  unsigned port;
  host_target_t target;
  if (parse_connect(id, p, len, &port, &target)) {
    send_error(id, EINVAL, "malformed CONNECT request");
    return;
  }
  if (find_stream(id)) {
    send_error(id, EEXIST, "request id %u is already in use", id);
    return;
  }
  if (nstreams + nrelays >= MAX_STREAMS) {
    send_error(id, EMFILE, "connect to 127.0.0.1:%u: over %u connections", port, MAX_STREAMS);
    return;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    send_error(id, errno, "connect to 127.0.0.1:%u: socket: %s", port, strerror(errno));
    return;
  }
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* relayed bytes go out as they come */
  int r;
  do r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
  while (r < 0 && errno == EINTR);
  if (r < 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    send_error(id, e, "connect to 127.0.0.1:%u: %s", port, strerror(e));
    return;
  }
  stream_t *s = stream_add(id, fd);
  if (len > 2) {
    s->target = malloc(sizeof *s->target);
    if (!s->target) die("out of memory");
    *s->target = target;
  }
  if (r == 0) stream_connect_done(s);
  else s->connecting = 1; /* the poll loop waits for it to be writable */
}

static void remove_closed_streams(void) {
  for (size_t i = 0; i < nstreams;) {
    stream_t *s = streams[i];
    if (s->in.fd < 0) {
      buf_free(&s->in.q);
      free(s->target);
      free(s);
      streams[i] = streams[--nstreams];
    } else {
      i++;
    }
  }
}

/*
 * LISTEN payload: u16 port (0: any) [| socket path\0 | token]. One listener per agent, on 127.0.0.1. With a
 * socket path (the host's egress socket, through a read-only mount) each connection is relayed there, after a
 * header line carrying the token; without one, or when that socket cannot be reached, it is tunnelled in frames.
 */
/* Reads a LISTEN payload (above) into target (zeroed when it names no socket): 0, or -1 when malformed. */
static int parse_listen(const unsigned char *p, size_t len, host_target_t *target) {
  memset(target, 0, sizeof *target);
  if (len < 2) return -1;
  return len > 2 && take_host_target(p + 2, len - 2, "PAI-EGRESS/1", target) ? -1 : 0;
}

static void do_listen(uint32_t id, const unsigned char *p, size_t len) {
  host_target_t target;
  if (parse_listen(p, len, &target)) {
    send_error(id, EINVAL, "malformed LISTEN payload");
    return;
  }
  if (listen_fd >= 0) {
    send_error(id, EEXIST, "the agent is already listening");
    return;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)((p[0] << 8) | p[1]));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  socklen_t alen = sizeof addr;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(fd, (struct sockaddr *)&addr, sizeof addr) || listen(fd, 128) ||
      getsockname(fd, (struct sockaddr *)&addr, &alen)) {
    int e = errno;
    if (fd >= 0) close(fd);
    send_error(id, e, "listen on 127.0.0.1:%u: %s", (unsigned)((p[0] << 8) | p[1]), strerror(e));
    return;
  }
  listen_fd = fd;
  egress_target = target;
  unsigned char port[2] = {(unsigned char)(ntohs(addr.sin_port) >> 8), (unsigned char)ntohs(addr.sin_port)};
  send_frame(T_LISTENING, id, port, 2);
}

/* ------------------------------------------------------------------ spawning */

static int set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Parses `count` NUL-terminated strings from p[*off, len) into out[]. */
static int take_strings(const unsigned char *p, size_t len, size_t *off, char **dst, size_t count) {
  for (size_t i = 0; i < count; i++) {
    const unsigned char *s = p + *off;
    const unsigned char *z = memchr(s, 0, len - *off);
    if (!z) return -1;
    if (dst) dst[i] = (char *)s;
    *off += (size_t)(z - s) + 1;
  }
  return 0;
}

static size_t env_key_len(const char *kv) {
  const char *eq = strchr(kv, '=');
  return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* Checks that the user may be used: as root any, otherwise only the agent's own. */
static int user_allowed(uint32_t id, uid_t uid, gid_t gid) {
  if (is_root || (uid == self_uid && gid == self_gid)) return 1;
  send_error(id, EPERM, "the agent runs as %u:%u, not root, and cannot act as %u:%u", (unsigned)self_uid,
             (unsigned)self_gid, (unsigned)uid, (unsigned)gid);
  return 0;
}

/* Closes every fd from `first` up, except `keep` (which is above `first`). */
static void close_other_fds(int first, int keep) {
  /* close_range(2) since Linux 5.9; fall back to a loop */
  if ((keep == first || syscall(SYS_close_range, (unsigned)first, (unsigned)keep - 1, 0u) == 0) &&
      syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
    return;
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 65536;
  if (max > 1 << 20) max = 1 << 20;
  for (long fd = first; fd < max; fd++)
    if (fd != keep) close((int)fd);
}

/*
 * Empties the bounding set of a command about to become an unprivileged user, so that nothing it runs can ever
 * hold a capability the container kept for the agent (setuid already clears its permitted and effective sets;
 * no-new-privileges keeps file capabilities and set-user-ID programs from giving any back). Needs CAP_SETPCAP;
 * without it (a container that did not keep it) the set stays as the container made it.
 */
static void drop_bounding_set(void) {
  for (int cap = 0; cap < 64; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL) return;
}

static void child_fail(int errfd, int stage) {
  int msg[2] = {stage, errno};
  ssize_t ignored = write(errfd, msg, sizeof msg);
  (void)ignored;
  _exit(127);
}

enum { STAGE_SETUP = 1, STAGE_USER = 2, STAGE_CWD = 3, STAGE_EXEC = 4 };
static const char *stage_name(int stage) {
  switch (stage) {
  case STAGE_USER: return "switch user";
  case STAGE_CWD: return "chdir";
  case STAGE_EXEC: return "exec";
  default: return "set up";
  }
}

/* The filesystem side of a user switch, for the terminal below; defined with the file requests. */
static int fs_become(uid_t uid, gid_t gid);
static void fs_restore(void);

/*
 * Opens a new pseudo-terminal of cols x rows for a command running as uid:gid: the master (non-blocking) and the
 * slave, both close-on-exec and neither the agent's controlling terminal. The terminal belongs to the command's
 * user (devpts gives a new one the opener's filesystem uid), as login(1) would make it. 0, or -1 with errno.
 */
static int open_pty(uid_t uid, gid_t gid, unsigned cols, unsigned rows, int *master, int *slave) {
  if (fs_become(uid, gid)) return -1;
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  int e = errno;
  fs_restore();
  if (m < 0) {
    errno = e;
    return -1;
  }
  int unlock = 0, s = -1;
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  if (ioctl(m, TIOCSPTLCK, &unlock) == 0 && ioctl(m, TIOCSWINSZ, &ws) == 0) {
    s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC); /* no path lookup in /dev/pts */
    if (s < 0 && (errno == EINVAL || errno == ENOTTY)) {
      char name[64];
      if (ptsname_r(m, name, sizeof name) == 0) s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    }
  }
  if (s < 0) {
    e = errno;
    close(m);
    errno = e;
    return -1;
  }
  *master = m;
  *slave = s;
  return 0;
}

/*
 * SPAWN payload: u8 flags | u32 uid | u32 gid | u16 argc | u16 envc | [u16 cols | u16 rows, with SPAWN_PTY] |
 * cwd\0 | argv[argc]\0 | env[envc]\0.
 * With SPAWN_PIPE the command also gets fd 3 (it reads PIPE_IN bytes there) and fd 4 (what it writes there
 * comes back as PIPE_OUT): Chromium's --remote-debugging-pipe.
 * With SPAWN_PTY the command leads a new session whose controlling terminal is a new pseudo-terminal of cols x rows,
 * on its stdin, stdout and stderr: what it writes comes back as STDOUT, STDIN bytes are typed on the terminal
 * (0x03 is Ctrl-C), RESIZE changes its size, and STDIN_EOF only stops the typing. When the command exits the
 * terminal is hung up.
 */
/* A SPAWN payload as parse_spawn reads it. The strings point into the payload; argv and env are arrays of their own. */
typedef struct {
  unsigned flags;
  uid_t uid;
  gid_t gid;
  unsigned cols, rows; /* SPAWN_PTY */
  char *cwd;
  char **argv; /* argc (>= 1) strings, then NULL; argv[0] is not empty */
  char **env;  /* envc strings, then NULL */
  size_t envc;
} spawn_request_t;

/*
 * Reads a SPAWN payload (see above) into r, acting on nothing: 0, or -1 when it is malformed. r->argv and r->env are
 * allocated (or NULL) either way; the caller frees them.
 */
static int parse_spawn(unsigned char *p, size_t len, spawn_request_t *r) {
  memset(r, 0, sizeof *r);
  if (len < 13) return -1;
  r->flags = p[0];
  r->uid = (r->flags & SPAWN_HAS_UID) ? (uid_t)get_u32(p + 1) : default_uid;
  r->gid = (r->flags & SPAWN_HAS_GID) ? (gid_t)get_u32(p + 5) : default_gid;
  size_t argc = ((size_t)p[9] << 8) | p[10];
  r->envc = ((size_t)p[11] << 8) | p[12];
  size_t off = 13;
  if (r->flags & SPAWN_PTY) {
    if (len < 17) return -1;
    r->cols = ((unsigned)p[13] << 8) | p[14];
    r->rows = ((unsigned)p[15] << 8) | p[16];
    off = 17;
  }
  r->argv = calloc(argc + 1, sizeof *r->argv);
  r->env = calloc(r->envc + 1, sizeof *r->env);
  if (!r->argv || !r->env) die("out of memory");
  if (argc == 0 || take_strings(p, len, &off, &r->cwd, 1) || take_strings(p, len, &off, r->argv, argc) ||
      take_strings(p, len, &off, r->env, r->envc) || off != len || r->argv[0][0] == 0)
    return -1;
  return 0;
}

static void do_spawn(uint32_t id, unsigned char *p, size_t len) {
  if (find_cmd(id)) {
    send_error(id, EEXIST, "request id %u is already in use", id);
    return;
  }
  spawn_request_t r;
  char **envp = NULL;
  if (parse_spawn(p, len, &r)) {
    send_error(id, EINVAL, "malformed SPAWN payload");
    goto done;
  }
  unsigned flags = r.flags, cols = r.cols, rows = r.rows;
  uid_t uid = r.uid;
  gid_t gid = r.gid;
  char *cwd = r.cwd, **argv = r.argv, **given = r.env;
  size_t envc = r.envc;
  if (!user_allowed(id, uid, gid)) goto done;

  /* Environment: the given entries, over the agent's own when asked to inherit. */
  size_t nenv = 0, base = 0;
  if (flags & SPAWN_INHERIT_ENV)
    while (environ[base]) base++;
  envp = calloc(base + envc + 1, sizeof *envp);
  if (!envp) die("out of memory");
  for (size_t i = 0; i < base; i++) {
    size_t k = env_key_len(environ[i]);
    int overridden = 0;
    for (size_t j = 0; j < envc && !overridden; j++)
      overridden = env_key_len(given[j]) == k && strncmp(given[j], environ[i], k) == 0;
    if (!overridden) envp[nenv++] = environ[i];
  }
  for (size_t j = 0; j < envc; j++) envp[nenv++] = given[j];

  /* With SPAWN_PTY, the terminal stands in for the stdin/stdout/stderr pipes: tty[0] the master, tty[1] the slave. */
  int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1}, ctl[2] = {-1, -1};
  int pinp[2] = {-1, -1}, poutp[2] = {-1, -1}, tty[2] = {-1, -1};
  int *fds[] = {inp, outp, errp, ctl, pinp, poutp, tty};
  int pty = (flags & SPAWN_PTY) != 0;
  if (pipe2(ctl, O_CLOEXEC) ||
      (pty ? open_pty(uid, gid, cols, rows, &tty[0], &tty[1])
           : pipe2(inp, O_CLOEXEC) || pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) ||
      ((flags & SPAWN_PIPE) && (pipe2(pinp, O_CLOEXEC) || pipe2(poutp, O_CLOEXEC))) ||
      (pty && (inp[1] = fcntl(tty[0], F_DUPFD_CLOEXEC, 0)) < 0)) {
    int e = errno;
    for (int i = 0; i < 7; i++) {
      close_fd(&fds[i][0]);
      close_fd(&fds[i][1]);
    }
    send_error(id, e, "spawn %s: %s: %s", argv[0], pty ? "terminal" : "pipe", strerror(e));
    goto done;
  }
  if (pty) outp[0] = tty[0]; /* read the master as the pipes are read; inp[1] (its copy) takes the typing */

  pid_t pid = fork();
  if (pid == 0) {
    /* child: own process group (with a terminal: own session), default signals, pipes on 0/1/2, nothing else open */
    sigset_t none;
    sigemptyset(&none);
    if (pty) setsid();
    else setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Move the control pipe and the fd 3/4 ends out of the way first: any of them may already be 0-4. */
    int ctl_fd = fcntl(ctl[1], F_DUPFD_CLOEXEC, 10);
    if (ctl_fd < 0) _exit(127);
    int pin_fd = -1, pout_fd = -1;
    if ((flags & SPAWN_PIPE) &&
        ((pin_fd = fcntl(pinp[0], F_DUPFD, 10)) < 0 || (pout_fd = fcntl(poutp[1], F_DUPFD, 10)) < 0))
      child_fail(ctl_fd, STAGE_SETUP);
    if (pty) {
      int tty_fd = fcntl(tty[1], F_DUPFD, 10);
      if (tty_fd < 0 || ioctl(tty_fd, TIOCSCTTY, 0) || dup2(tty_fd, 0) < 0 || dup2(tty_fd, 1) < 0 ||
          dup2(tty_fd, 2) < 0)
        child_fail(ctl_fd, STAGE_SETUP);
    } else if (dup2(inp[0], 0) < 0 || dup2(outp[1], 1) < 0 || dup2(errp[1], 2) < 0) {
      child_fail(ctl_fd, STAGE_SETUP);
    }
    if ((flags & SPAWN_PIPE) && (dup2(pin_fd, 3) < 0 || dup2(pout_fd, 4) < 0)) child_fail(ctl_fd, STAGE_SETUP);
    close_other_fds((flags & SPAWN_PIPE) ? 5 : 3, ctl_fd);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != child_nofile_soft) {
      rl.rlim_cur = child_nofile_soft;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (is_root && (uid != 0 || gid != 0)) {
      gid_t groups[1] = {gid};
      if (uid != 0) drop_bounding_set();
      if (setgroups(1, groups) || setgid(gid) || setuid(uid)) child_fail(ctl_fd, STAGE_USER);
      if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid) {
        errno = EPERM;
        child_fail(ctl_fd, STAGE_USER);
      }
    }
    if (cwd[0] && chdir(cwd)) child_fail(ctl_fd, STAGE_CWD);
    environ = envp;
    execvp(argv[0], argv);
    child_fail(ctl_fd, STAGE_EXEC);
  }
  int fork_errno = errno;
  close_fd(&inp[0]);
  close_fd(&outp[1]);
  close_fd(&errp[1]);
  close_fd(&ctl[1]);
  close_fd(&pinp[0]);
  close_fd(&poutp[1]);
  close_fd(&tty[1]);
  if (pid < 0) {
    close_fd(&inp[1]);
    close_fd(&outp[0]);
    close_fd(&errp[0]);
    close_fd(&ctl[0]);
    close_fd(&pinp[1]);
    close_fd(&poutp[0]);
    send_error(id, fork_errno, "spawn %s: fork: %s", argv[0], strerror(fork_errno));
    goto done;
  }
  /* Wait for exec (the CLOEXEC control pipe closes) or for the child's report of what failed. */
  int msg[2];
  ssize_t n;
  do n = read(ctl[0], msg, sizeof msg);
  while (n < 0 && errno == EINTR);
  close(ctl[0]);
  if (n == (ssize_t)sizeof msg) {
    close_fd(&inp[1]);
    close_fd(&outp[0]);
    close_fd(&errp[0]);
    close_fd(&pinp[1]);
    close_fd(&poutp[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    const char *what = msg[0] == STAGE_CWD ? cwd : argv[0];
    send_error(id, msg[1], "spawn %s: %s %s: %s", argv[0], stage_name(msg[0]), what, strerror(msg[1]));
    goto done;
  }
  set_nonblock(inp[1]);
  set_nonblock(outp[0]);
  if (!pty) set_nonblock(errp[0]);
  if (flags & SPAWN_PIPE) {
    set_nonblock(pinp[1]);
    set_nonblock(poutp[0]);
  }
  cmd_t *c = calloc(1, sizeof *c);
  if (!c) die("out of memory");
  c->id = id;
  c->pid = pid;
  c->signalled = (flags & SPAWN_KILL_GROUP_ON_EXIT) != 0;
  c->pty = pty;
  sink_init(&c->in, inp[1]);
  sink_init(&c->pin, pinp[1]);
  c->out_fd = outp[0];
  c->err_fd = errp[0];
  c->pout_fd = poutp[0];
  if (!(flags & SPAWN_STDIN)) close_fd(&c->in.fd);
  if (ncmds == cmds_cap) {
    cmds_cap = cmds_cap ? cmds_cap * 2 : 64;
    cmds = realloc(cmds, cmds_cap * sizeof *cmds);
    if (!cmds) die("out of memory");
  }
  cmds[ncmds++] = c;
  send_u32(T_SPAWNED, id, (uint32_t)pid);
done:
  free(r.argv);
  free(r.env);
  free(envp);
}

/* ------------------------------------------------------------------ files */

/* Switches filesystem credentials to uid:gid (root only). Returns 0 on success. */
static int fs_become(uid_t uid, gid_t gid) {
  if (!is_root) return 0; /* user_allowed() already checked it is the agent's own */
  setfsgid(gid);
  setfsuid(uid);
  if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid) {
    setfsuid(0);
    setfsgid(0);
    errno = EPERM;
    return -1;
  }
  return 0;
}

static void fs_restore(void) {
  if (!is_root) return;
  setfsuid(0);
  setfsgid(0);
}

static int mkdir_parents(char *path) {
  for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = 0;
    int r = mkdir(path, 0755);
    int e = errno;
    *s = '/';
    if (r && e != EEXIST) {
      errno = e;
      return -1;
    }
  }
  return 0;
}

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/*
 * File requests are confined to a root directory (the sandbox's workspace), resolved the way the facade's
 * `realpath -m` scripts resolve it: symlinks followed inside the container, and a path that resolves outside
 * the root refused (EXDEV, the resolved path in the message). The final open then refuses any symlink that
 * appeared meanwhile (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS from the root, where the kernel has it).
 */

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
struct pai_open_how {
  uint64_t flags, mode, resolve;
};
#define PAI_RESOLVE_NO_SYMLINKS 0x04
#define PAI_RESOLVE_BENEATH 0x08

/* `realpath -m`: the longest existing prefix resolved, the rest (normalised by the host) appended. */
static char *resolve_missing(const char *path) {
  size_t n = strlen(path);
  char *head = strdup(path);
  if (!head) die("out of memory");
  size_t cut = n;
  for (;;) {
    head[cut] = 0;
    char *real = realpath(cut == 0 ? "/" : head, NULL);
    if (real) {
      const char *rest = path + cut;
      size_t rl = strlen(real);
      char *out = malloc(rl + strlen(rest) + 2);
      if (!out) die("out of memory");
      strcpy(out, real);
      if (*rest) {
        if (rl == 1) out[0] = 0; /* "/" + "/rest" */
        strcat(out, rest);
      }
      free(real);
      free(head);
      return out;
    }
    if (errno != ENOENT && errno != ENOTDIR) {
      int e = errno;
      free(head);
      errno = e;
      return NULL;
    }
    while (cut > 0 && path[cut - 1] != '/') cut--; /* drop the last component */
    if (cut > 0) cut--;
  }
}

static int within(const char *path, const char *root) {
  size_t rl = strlen(root);
  return strncmp(path, root, rl) == 0 && (path[rl] == 0 || path[rl] == '/');
}

/* Opens `resolved` (inside `root`) with no symlink anywhere below the root; falls back to O_NOFOLLOW. */
static int open_beneath(const char *root, const char *resolved, int flags, mode_t mode) {
  const char *rel = resolved + strlen(root);
  while (*rel == '/') rel++;
  int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd >= 0) {
    struct pai_open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC), .mode = mode,
                               .resolve = PAI_RESOLVE_BENEATH | PAI_RESOLVE_NO_SYMLINKS};
    long fd = syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof how);
    int e = errno;
    close(rootfd);
    if (fd >= 0 || (e != ENOSYS && e != EPERM && e != E2BIG)) {
      errno = e;
      return (int)fd;
    }
  }
  return open(resolved, flags | O_CLOEXEC | O_NOFOLLOW, mode);
}

/* A file request's head as parse_file_head reads it; root and path point into the payload. */
typedef struct {
  unsigned flags;
  uint32_t a; /* WRITE_FILE: the mode; READ_FILE: the most bytes */
  uid_t uid;
  gid_t gid;
  char *root, *path;
  size_t off; /* where the bytes after the path start */
} file_request_t;

/*
 * Reads a file request, `u8 flags | u32 a | u32 uid | u32 gid | root\0 | path\0 [| bytes]`, into r, acting on
 * nothing: 0, -1 when it is malformed, -2 when the root or the path is not absolute.
 */
static int parse_file_head(unsigned char *p, size_t len, file_request_t *r) {
  memset(r, 0, sizeof *r);
  if (len < 15) return -1;
  r->flags = p[0];
  r->a = get_u32(p + 1);
  r->uid = (r->flags & FILE_HAS_UID) ? (uid_t)get_u32(p + 5) : default_uid;
  r->gid = (r->flags & FILE_HAS_GID) ? (gid_t)get_u32(p + 9) : default_gid;
  size_t at = 13;
  char *strings[2];
  if (take_strings(p, len, &at, strings, 2)) return -1;
  r->root = strings[0];
  r->path = strings[1];
  r->off = at;
  return r->root[0] == '/' && r->path[0] == '/' ? 0 : -2;
}

/* A file request's head (parse_file_head), answered with an ERROR (NULL) when malformed or not allowed. */
static char *file_head(uint32_t id, unsigned char *p, size_t len, unsigned *flags, uint32_t *a, uid_t *uid,
                       gid_t *gid, char **root, size_t *off) {
  file_request_t r;
  int parsed = parse_file_head(p, len, &r);
  if (parsed == -1) {
    send_error(id, EINVAL, "malformed file request");
    return NULL;
  }
  if (parsed == -2) {
    send_error(id, EINVAL, "root and path must be absolute: %s, %s", r.root, r.path);
    return NULL;
  }
  *flags = r.flags;
  *a = r.a;
  *uid = r.uid;
  *gid = r.gid;
  *root = r.root;
  *off = r.off;
  return user_allowed(id, r.uid, r.gid) ? r.path : NULL;
}

/* Resolves `path`, refusing it (EXDEV) when it leaves `root`. The caller frees the result. */
static char *resolve_within(uint32_t id, const char *verb, const char *path, const char *root) {
  char *resolved = resolve_missing(path);
  if (!resolved) {
    send_error(id, errno, "%s %s: %s", verb, path, strerror(errno));
    return NULL;
  }
  if (!within(resolved, root)) {
    send_error(id, EXDEV, "%s", resolved); /* the host reports it as outside the workspace */
    free(resolved);
    return NULL;
  }
  return resolved;
}

/*
 * WRITE_FILE payload: u8 flags | u32 mode | u32 uid | u32 gid | root\0 | path\0 | bytes. The file is written by
 * its name in its (resolved) parent: an existing symlink there is replaced, as tar would; a directory is
 * refused (EISDIR). Flag 8 checks only (nothing is written): the host checks every file of a batch first.
 */
static void do_write_file(uint32_t id, unsigned char *p, size_t len) {
  unsigned flags;
  uint32_t mode;
  uid_t uid;
  gid_t gid;
  char *root;
  size_t off;
  char *path = file_head(id, p, len, &flags, &mode, &uid, &gid, &root, &off);
  if (!path) return;
  if (fs_become(uid, gid)) {
    send_error(id, errno, "write %s: cannot act as %u:%u: %s", path, (unsigned)uid, (unsigned)gid, strerror(errno));
    return;
  }
  const char *step = "resolve";
  int fd = -1, dirfd = -1;
  char *resolved = NULL, *parent = NULL;
  char *slash = strrchr(path, '/');
  const char *name = slash + 1;
  if (!(resolved = resolve_within(id, "write", path, root))) goto done;
  *slash = 0;
  parent = resolve_within(id, "write", slash == path ? "/" : path, root);
  *slash = '/';
  if (!parent) goto done;
  struct stat st;
  if (strcmp(resolved, root) == 0 || *name == 0 || (stat(resolved, &st) == 0 && S_ISDIR(st.st_mode))) {
    errno = EISDIR;
    goto fail;
  }
  if (flags & FILE_CHECK_ONLY) {
    send_frame(T_FILE_WRITTEN, id, NULL, 0);
    goto done;
  }
  step = "mkdir";
  size_t pl = strlen(parent);
  char *probe = malloc(pl + 3);
  if (!probe) die("out of memory");
  memcpy(probe, parent, pl);
  memcpy(probe + pl, "/x", 3);
  int made = mkdir_parents(probe);
  free(probe);
  if (made && errno != EEXIST) goto fail;
  step = "open";
  dirfd = open_beneath(root, parent, O_PATH | O_DIRECTORY, 0);
  if (dirfd < 0) goto fail;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) && unlinkat(dirfd, name, 0))
    goto fail;
  fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW,
              (flags & FILE_HAS_MODE) ? (mode & 07777) : 0644);
  if (fd < 0) goto fail;
  if (fstat(fd, &st)) goto fail;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    goto fail;
  }
  step = "chmod";
  if ((flags & FILE_HAS_MODE) && fchmod(fd, mode & 07777)) goto fail;
  step = "write";
  if (write_all(fd, p + off, len - off)) goto fail;
  send_frame(T_FILE_WRITTEN, id, NULL, 0);
  goto done;
fail: {
  int e = errno;
  send_error(id, e, "write %s: %s: %s", path, step, e == EINVAL ? "not a regular file" : strerror(e));
}
done:
  if (fd >= 0) close(fd);
  if (dirfd >= 0) close(dirfd);
  fs_restore();
  free(resolved);
  free(parent);
}

/* READ_FILE payload: u8 flags | u32 max bytes | u32 uid | u32 gid | root\0 | path\0 */
static void do_read_file(uint32_t id, unsigned char *p, size_t len) {
  unsigned flags;
  uint32_t max;
  uid_t uid;
  gid_t gid;
  char *root;
  size_t off;
  char *path = file_head(id, p, len, &flags, &max, &uid, &gid, &root, &off);
  if (!path) return;
  if (off != len) {
    send_error(id, EINVAL, "malformed file request");
    return;
  }
  if (max == 0 || max > MAX_PAYLOAD) max = MAX_PAYLOAD;
  if (fs_become(uid, gid)) {
    send_error(id, errno, "read %s: cannot act as %u:%u: %s", path, (unsigned)uid, (unsigned)gid, strerror(errno));
    return;
  }
  char *resolved = resolve_within(id, "read", path, root);
  if (!resolved) {
    fs_restore();
    return;
  }
  int fd = open_beneath(root, resolved, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
  int e = errno;
  fs_restore();
  free(resolved);
  if (fd < 0) {
    if (e == ENOENT || e == ENOTDIR) send_frame(T_FILE_MISSING, id, NULL, 0);
    else send_error(id, e, "read %s: %s", path, strerror(e));
    return;
  }
  struct stat st;
  if (fstat(fd, &st)) {
    e = errno;
    close(fd);
    send_error(id, e, "read %s: %s", path, strerror(e));
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    send_error(id, S_ISDIR(st.st_mode) ? EISDIR : EINVAL, "read %s: not a regular file", path);
    return;
  }
  if ((uint64_t)st.st_size > max) {
    close(fd);
    send_error(id, EFBIG, "read %s: file is %lld bytes, over the limit of %u", path, (long long)st.st_size, max);
    return;
  }
  /* Read into the frame directly; the size may change under us, so read up to max + 1. */
  unsigned char *frame = buf_reserve(&out, HDR + (size_t)max + 1);
  size_t got = 0;
  for (;;) {
    ssize_t n = read(fd, frame + HDR + got, (size_t)max + 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      e = errno;
      close(fd);
      send_error(id, e, "read %s: %s", path, strerror(e));
      return;
    }
    if (n == 0) break;
    got += (size_t)n;
    if (got > max) {
      close(fd);
      send_error(id, EFBIG, "read %s: file grew over the limit of %u bytes", path, max);
      return;
    }
  }
  close(fd);
  put_u32(frame, (uint32_t)got);
  frame[4] = T_FILE_DATA;
  put_u32(frame + 5, id);
  out.len += HDR + got;
}

/* ------------------------------------------------------------------ frames in */

/* Bytes from the host for a command's stdin (T_STDIN) or fd 3 (T_PIPE_IN). */
static void cmd_input(cmd_t *c, sink_t *s, uint32_t id, const unsigned char *p, size_t len, const char *what) {
  if (!c || c->exited) return; /* raced with its exit */
  if (sink_push(s, p, len)) {
    send_error(id, ENOBUFS, "%s queue over %u bytes; the host must wait for its acknowledgement", what,
               SINK_QUEUE_MAX);
    close_sink(s);
    return;
  }
  pump_sink(s);
}

static void handle_frame(unsigned type, uint32_t id, unsigned char *p, size_t len) {
  cmd_t *c;
  stream_t *st;
  switch (type) {
  case T_PING:
    send_frame(T_PONG, id, p, len);
    break;
  case T_SPAWN:
    do_spawn(id, p, len);
    break;
  case T_STDIN:
    c = find_cmd(id);
    cmd_input(c, c ? &c->in : NULL, id, p, len, "stdin");
    break;
  case T_PIPE_IN:
    c = find_cmd(id);
    cmd_input(c, c ? &c->pin : NULL, id, p, len, "pipe");
    break;
  case T_STDIN_EOF:
    c = find_cmd(id);
    if (!c || c->exited) break;
    c->in.eof_pending = c->in.fd >= 0;
    pump_sink(&c->in);
    break;
  case T_SIGNAL:
    c = find_cmd(id);
    if (len != 4) {
      send_error(id, EINVAL, "malformed SIGNAL payload");
      break;
    }
    if (!c) break; /* already gone */
    uint32_t sig = get_u32(p);
    if (sig < 1 || sig > 64) {
      send_error(id, EINVAL, "invalid signal %u", sig);
      break;
    }
    c->signalled = 1;
    if (kill(-c->pid, (int)sig) && errno == ESRCH && !c->exited) kill(c->pid, (int)sig);
    break;
  case T_RESIZE: /* u16 cols | u16 rows, for a command on a terminal */
    c = find_cmd(id);
    if (len != 4) {
      send_error(id, EINVAL, "malformed RESIZE payload");
      break;
    }
    if (!c || c->exited) break; /* already gone */
    if (!c->pty) {
      send_error(id, ENOTTY, "request %u is not on a terminal", id);
      break;
    }
    {
      struct winsize ws = {.ws_col = (unsigned short)((p[0] << 8) | p[1]), .ws_row = (unsigned short)((p[2] << 8) | p[3])};
      int master = c->out_fd >= 0 ? c->out_fd : c->in.fd;
      if (master >= 0) ioctl(master, TIOCSWINSZ, &ws); /* the kernel sends SIGWINCH to the foreground group */
    }
    break;
  case T_WRITE_FILE:
    do_write_file(id, p, len);
    break;
  case T_READ_FILE:
    do_read_file(id, p, len);
    break;
  case T_LISTEN:
    do_listen(id, p, len);
    break;
  case T_CONNECT:
    do_connect(id, p, len);
    break;
  case T_STREAM_DATA:
    st = find_stream(id);
    if (!st || st->in.fd < 0) break; /* closed meanwhile */
    if (!st->wr_open) break;         /* after the host's own EOF, or before CONNECTED: ignore */
    if (sink_push(&st->in, p, len)) {
      stream_close(st); /* the host ignored the window */
      break;
    }
    stream_pump(st);
    break;
  case T_STREAM_EOF:
    st = find_stream(id);
    if (!st || st->in.fd < 0 || !st->wr_open) break;
    st->in.eof_pending = 1;
    stream_pump(st);
    break;
  case T_STREAM_CLOSE:
    st = find_stream(id);
    if (st) stream_close(st);
    break;
  case T_STREAM_ACK:
    st = find_stream(id);
    if (len != 4) {
      send_error(id, EINVAL, "malformed STREAM_ACK payload");
      break;
    }
    if (!st) break;
    uint32_t n = get_u32(p);
    st->unacked = n >= st->unacked ? 0 : st->unacked - n;
    break;
  default:
    fprintf(stderr, "pai-agent: protocol error: unknown frame type 0x%02x\n", type);
    send_error(0, EPROTO, "protocol error: unknown frame type 0x%02x", type);
    flush_out();
    kill_all();
    _exit(2);
  }
}

/*
 * Whether the `len` bytes at b start with a whole frame: 1 (its payload length in *plen), 0 when more must come,
 * -1 when its header declares a payload over MAX_PAYLOAD (in *plen).
 */
static int take_frame(const unsigned char *b, size_t len, uint32_t *plen) {
  if (len < HDR) return 0;
  *plen = get_u32(b);
  if (*plen > MAX_PAYLOAD) return -1;
  return len - HDR >= *plen;
}

static void read_host(void) {
  for (int rounds = 0; rounds < 4; rounds++) {
    ssize_t n = read(0, inbuf + in_len, in_cap - in_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      host_eof = 1;
      break;
    }
    in_len += (size_t)n;
    size_t off = 0;
    for (;;) {
      uint32_t plen;
      int whole = take_frame(inbuf + off, in_len - off, &plen);
      if (whole < 0) {
        fprintf(stderr, "pai-agent: protocol error: frame of %u bytes (max %u)\n", plen, MAX_PAYLOAD);
        send_error(0, EPROTO, "protocol error: frame of %u bytes exceeds %u", plen, MAX_PAYLOAD);
        flush_out();
        kill_all();
        _exit(2);
      }
      if (!whole) break;
      handle_frame(inbuf[off + 4], get_u32(inbuf + off + 5), inbuf + off + HDR, plen);
      off += HDR + plen;
    }
    if (off > 0) {
      memmove(inbuf, inbuf + off, in_len - off);
      in_len -= off;
    }
    if ((size_t)n < READ_CHUNK) break; /* probably drained */
  }
}

/* ------------------------------------------------------------------ main */

/* --idle: a main process that waits for a stop signal and reaps whatever is reparented to it. */
static void idle(void) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  for (;;) {
    int sig = sigwaitinfo(&mask, NULL);
    if (sig == SIGCHLD) {
      while (waitpid(-1, NULL, WNOHANG) > 0) {
      }
    } else if (sig > 0) {
      exit(0);
    }
  }
}

/* --dial: connects to the host's socket; a child serves it on fds 0 and 1, this process idles. */
static void dial_host(void) {
  const char *path = getenv("PAI_AGENT_DIAL");
  const char *token = getenv("PAI_AGENT_TOKEN");
  char header[MAX_TOKEN + 32];
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  prctl(PR_SET_NAME, "pai-idle", 0, 0, 0);
  if (!path || !token || strlen(path) >= sizeof addr.sun_path || strlen(token) > MAX_TOKEN) idle();
  memcpy(addr.sun_path, path, strlen(path));
  int len = snprintf(header, sizeof header, "PAI-AGENT/1 %s\n", token);
  /* What the commands inherit must not carry them (the host admits a token once anyway). */
  unsetenv("PAI_AGENT_DIAL");
  unsetenv("PAI_AGENT_TOKEN");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) idle();
  for (int off = 0; off < len;) {
    ssize_t n = write(fd, header + off, (size_t)(len - off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) idle();
    off += (int)n;
  }
  pid_t child = fork();
  if (child != 0) {
    close(fd);
    idle(); /* and reaps the child when its connection ends */
  }
  prctl(PR_SET_NAME, "pai-agent", 0, 0, 0);
  if (dup2(fd, 0) < 0 || dup2(fd, 1) < 0) _exit(70);
  if (fd > 1) close(fd);
}

static void parse_args(int argc, char **argv) {
  default_uid = is_root ? 1000 : self_uid;
  default_gid = is_root ? 1000 : self_gid;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--user") == 0 && i + 1 < argc) {
      const char *v = argv[++i];
      unsigned long u, g;
      char *end;
      if (strcmp(v, "self") == 0) {
        default_uid = self_uid;
        default_gid = self_gid;
        continue;
      }
      u = strtoul(v, &end, 10);
      if (end == v || *end != ':') goto usage;
      g = strtoul(end + 1, &end, 10);
      if (*end != 0 || u > UINT32_MAX - 1 || g > UINT32_MAX - 1) goto usage;
      default_uid = (uid_t)u;
      default_gid = (gid_t)g;
    } else if (strcmp(argv[i], "--idle") == 0 && argc == 2) {
      idle();
    } else if (strcmp(argv[i], "--dial") == 0 && argc == 2) {
      dial_host();
    } else if (strcmp(argv[i], "--version") == 0) {
      fprintf(stderr, "pai-agent %s (protocol %d)\n", AGENT_VERSION, PROTOCOL_VERSION);
      exit(0);
    } else {
      goto usage;
    }
  }
  return;
usage:
  fprintf(stderr, "usage: pai-agent [--user UID:GID | --user self] | --dial | --idle | --version\n");
  exit(64);
}

int main(int argc, char **argv) {
  self_uid = geteuid();
  self_gid = getegid();
  is_root = self_uid == 0;
  parse_args(argc, argv);

  /* Not dumpable: a process with our uid cannot ptrace us or open /proc/<us>/fd/1 to forge frames. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  /* Orphans of our commands come to us (and get reaped) even when we are not PID 1. */
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  if (is_root) setgroups(0, NULL); /* root's supplementary groups must not leak into file access */
  umask(022);

  struct rlimit rl;
  child_nofile_soft = 1024;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    child_nofile_soft = rl.rlim_cur;
    if (rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }

  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &mask, NULL)) die("sigprocmask");
  int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) die("signalfd");
  if (set_nonblock(0) || set_nonblock(1)) die("fcntl O_NONBLOCK on stdin/stdout");
  /* Larger pipes to and from the host (when they are pipes): fewer wake-ups per relayed megabyte. */
  fcntl(0, F_SETPIPE_SZ, 1 << 20);
  fcntl(1, F_SETPIPE_SZ, 1 << 20);

  in_cap = HDR + MAX_PAYLOAD + READ_CHUNK;
  inbuf = malloc(in_cap);
  if (!inbuf) die("out of memory");

  {
    static const char version[] = AGENT_VERSION;
    unsigned char *p = frame_begin(T_HELLO, 0, 22 + sizeof version - 1);
    p[0] = 0;
    p[1] = PROTOCOL_VERSION;
    put_u32(p + 2, (uint32_t)getpid());
    put_u32(p + 6, (uint32_t)self_uid);
    put_u32(p + 10, (uint32_t)self_gid);
    put_u32(p + 14, (uint32_t)default_uid);
    put_u32(p + 18, (uint32_t)default_gid);
    memcpy(p + 22, version, sizeof version - 1);
  }

  struct pollfd *pfds = NULL;
  /* pollfd index -> what it is: the kind (below) and the command's or connection's index */
  enum { P_STDIN, P_STDOUT, P_STDERR, P_PIPE_IN, P_PIPE_OUT, P_STREAM_IN, P_STREAM_OUT, P_LISTEN, P_RELAY };
  struct { unsigned kind; size_t index; } *pmap = NULL;
  size_t pcap = 0;
  int stopping = 0;

  while (!stopping) {
    if (flush_out()) break;
    size_t need = 4 + ncmds * 5 + nstreams * 2 + nrelays * 2;
    if (need > pcap) {
      pcap = need * 2;
      pfds = realloc(pfds, pcap * sizeof *pfds);
      pmap = realloc(pmap, pcap * sizeof *pmap);
      if (!pfds || !pmap) die("out of memory");
    }
    size_t np = 0;
    pfds[np++] = (struct pollfd){.fd = host_eof || out.len > OUT_PAUSE_HOST ? -1 : 0, .events = POLLIN};
    pfds[np++] = (struct pollfd){.fd = out.len ? 1 : -1, .events = POLLOUT};
    pfds[np++] = (struct pollfd){.fd = sfd, .events = POLLIN};
    int paused = out.len > OUT_PAUSE_CHILDREN;
#define WATCH(f, ev, k, i)                                                                                   \
  do {                                                                                                       \
    pmap[np].kind = (k);                                                                                     \
    pmap[np].index = (i);                                                                                    \
    pfds[np++] = (struct pollfd){.fd = (f), .events = (ev)};                                                  \
  } while (0)
    if (listen_fd >= 0 && !paused) WATCH(listen_fd, POLLIN, P_LISTEN, 0);
    for (size_t i = 0; i < ncmds; i++) {
      cmd_t *c = cmds[i];
      if (c->out_fd >= 0 && (!paused || c->exited)) WATCH(c->out_fd, POLLIN, P_STDOUT, i);
      if (c->err_fd >= 0 && (!paused || c->exited)) WATCH(c->err_fd, POLLIN, P_STDERR, i);
      if (c->pout_fd >= 0 && (!paused || c->exited)) WATCH(c->pout_fd, POLLIN, P_PIPE_OUT, i);
      if (c->in.fd >= 0 && c->in.q.len > 0) WATCH(c->in.fd, POLLOUT, P_STDIN, i);
      if (c->pin.fd >= 0 && c->pin.q.len > 0) WATCH(c->pin.fd, POLLOUT, P_PIPE_IN, i);
    }
    for (size_t i = 0; i < nstreams; i++) {
      stream_t *s = streams[i];
      if (s->in.fd < 0) continue;
      if (s->connecting) WATCH(s->in.fd, POLLOUT, P_STREAM_IN, i);
      if (s->rd_open && !paused && s->unacked < STREAM_WINDOW) WATCH(s->in.fd, POLLIN, P_STREAM_OUT, i);
      if (s->in.q.len > 0) WATCH(s->in.fd, POLLOUT, P_STREAM_IN, i);
    }
    for (size_t i = 0; i < nrelays; i++) {
      relay_t *r = relays[i];
      for (int j = 0; r->fd[0] >= 0 && j < 2; j++) {
        short ev = relay_events(r, j);
        if (ev) WATCH(r->fd[j], ev, P_RELAY, i);
      }
    }
#undef WATCH
    if (host_eof && ncmds == 0 && out.len == 0) break;
    int r = poll(pfds, np, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    /* 1. pipes and connections (the tables do not shrink in this pass) */
    for (size_t k = 3; k < np; k++) {
      if (!pfds[k].revents) continue;
      size_t i = pmap[k].index;
      switch (pmap[k].kind) {
      case P_STDIN: pump_sink(&cmds[i]->in); break;
      case P_PIPE_IN: pump_sink(&cmds[i]->pin); break;
      case P_STDOUT: if (cmds[i]->out_fd >= 0) pump_output(cmds[i], &cmds[i]->out_fd, T_STDOUT); break;
      case P_STDERR: if (cmds[i]->err_fd >= 0) pump_output(cmds[i], &cmds[i]->err_fd, T_STDERR); break;
      case P_PIPE_OUT: if (cmds[i]->pout_fd >= 0) pump_output(cmds[i], &cmds[i]->pout_fd, T_PIPE_OUT); break;
      case P_STREAM_IN: stream_pump(streams[i]); break;
      case P_STREAM_OUT: if (streams[i]->in.fd >= 0 && streams[i]->rd_open) stream_read(streams[i]); break;
      case P_LISTEN: accept_streams(); break;
      case P_RELAY: relay_event(relays[i]); break;
      }
    }
    /* 2. signals: reap, or stop */
    if (pfds[2].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo != SIGCHLD) stopping = 1;
      }
      reap();
    }
    /* 3. the host */
    if (pfds[0].revents) read_host();
    if (host_eof) stopping = 1;
    /* 4. acknowledgements, coalesced per round */
    for (size_t i = 0; i < ncmds; i++)
      if (!cmds[i]->exited) send_acks(cmds[i]);
    for (size_t i = 0; i < nstreams; i++) {
      stream_t *s = streams[i];
      if (s->in.ack && s->in.fd >= 0) send_u32(T_STREAM_ACK_OUT, s->id, s->in.ack);
      s->in.ack = 0;
    }
    remove_finished();
    remove_closed_streams();
    remove_closed_relays();
  }

  /*
   * Host gone or told to stop: take every command down with us, reap them (so no zombie is left to a slow
   * init) and flush what we can, for at most about a second.
   */
  kill_all();
  for (size_t i = 0; i < nstreams; i++) close_fd(&streams[i]->in.fd);
  for (size_t i = 0; i < nrelays; i++) relay_close(relays[i]);
  close_fd(&listen_fd);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int children = 1, writable = 1;
  while (children || (writable && out.len > 0)) {
    if (writable && flush_out()) writable = 0;
    while (children) {
      pid_t pid = waitpid(-1, NULL, WNOHANG);
      if (pid > 0) continue;
      if (pid < 0 && errno == EINTR) continue;
      if (pid < 0) children = 0; /* ECHILD: none left */
      break;
    }
    if (!children && (!writable || out.len == 0)) break;
    struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN}, {.fd = writable && out.len ? 1 : -1, .events = POLLOUT}};
    poll(pf, 2, 50);
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 1000) break;
  }
  return 0;
}
