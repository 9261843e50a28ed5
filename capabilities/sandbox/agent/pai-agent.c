/*
 * pai-agent — PAI's in-container command agent.
 *
 * A small static program (built against musl by ./build.sh) that runs inside a sandbox container and
 * runs commands for the host over ONE long-lived byte stream: its own stdin (host -> agent) and stdout
 * (agent -> host). Nothing but frames is ever written to stdout; diagnostics go to stderr.
 *
 * Frame (both directions): u32 BE payload length | u8 type | u32 BE request id | payload.
 * Payloads are at most MAX_PAYLOAD bytes. See README.md beside this file for the frame table.
 *
 * Usage: pai-agent [--user UID:GID | --user self]
 *        pai-agent --idle
 *   --user  the user requests run as when they name none. Default: 1000:1000 when the agent runs as
 *           root, the agent's own user otherwise.
 *   --idle  do nothing until SIGTERM/SIGINT/SIGHUP, reaping children: a container main process for images
 *           without `sleep` (the agent itself is then started with `docker exec`).
 *
 * Design notes:
 *  - One poll() loop over the host stream, a signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP) and every
 *    command's pipes. All fds are non-blocking; nothing blocks on a slow host: when the outgoing
 *    buffer is large the agent stops reading the commands' pipes (backpressure reaches them as a full
 *    pipe), and when it is very large it also stops reading the host.
 *  - Each command runs in its own process group, with stdin/stdout/stderr on pipes owned by the agent
 *    and every other fd closed, so nothing it runs can write to the agent's stdout. The agent is also
 *    non-dumpable, so a same-uid process cannot open /proc/<agent>/fd/1 or ptrace it.
 *  - Running as root, a command drops to its uid/gid (setgroups, setgid, setuid) before exec, and file
 *    operations run under setfsuid/setfsgid; anything that cannot drop privileges fails closed.
 *  - The agent is a child subreaper and reaps everything (it may be PID 1). Exits are reported only
 *    for its own commands; orphans are reaped silently.
 *  - When a command's leader exits, the output already in its pipes is forwarded, then EXIT is sent.
 *    Output written later by background descendants is read and discarded (so they do not die of
 *    SIGPIPE); a SIGNAL for the request still reaches the group while any of it holds the pipes.
 *    If the host signalled the command, or asked for it in SPAWN (flag 0x10), the rest of its group is
 *    killed when the leader exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PAI_AGENT_BUILD
#define PAI_AGENT_BUILD "dev"
#endif
#define AGENT_VERSION "0.1.0+" PAI_AGENT_BUILD
#define PROTOCOL_VERSION 1

#define HDR 9u
#define MAX_PAYLOAD (1024u * 1024u)
#define READ_CHUNK (64u * 1024u)
#define OUT_PAUSE_CHILDREN (4u * 1024u * 1024u) /* stop reading command pipes above this */
#define OUT_PAUSE_HOST (16u * 1024u * 1024u)    /* stop reading the host above this */
#define STDIN_QUEUE_MAX (8u * 1024u * 1024u)    /* per command; the host keeps a smaller window */
#define DRAIN_MAX (1024u * 1024u)               /* per stream, when a leader exits */

/* host -> agent */
enum { T_PING = 0x01, T_SPAWN = 0x02, T_STDIN = 0x03, T_STDIN_EOF = 0x04, T_SIGNAL = 0x05, T_WRITE_FILE = 0x06, T_READ_FILE = 0x07 };
/* agent -> host */
enum {
  T_HELLO = 0x81, T_PONG = 0x82, T_SPAWNED = 0x83, T_STDOUT = 0x84, T_STDERR = 0x85, T_EXIT = 0x86,
  T_ERROR = 0x87, T_FILE_DATA = 0x88, T_FILE_MISSING = 0x89, T_FILE_WRITTEN = 0x8A, T_STDIN_ACK = 0x8B
};
/* SPAWN flags */
#define SPAWN_STDIN 0x01u
#define SPAWN_HAS_UID 0x02u
#define SPAWN_HAS_GID 0x04u
#define SPAWN_INHERIT_ENV 0x08u
#define SPAWN_KILL_GROUP_ON_EXIT 0x10u
/* WRITE_FILE / READ_FILE flags */
#define FILE_HAS_UID 0x01u
#define FILE_HAS_GID 0x02u
#define FILE_HAS_MODE 0x04u

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

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static uint32_t get_u32(const unsigned char *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* ------------------------------------------------------------------ state */

typedef struct {
  uint32_t id;
  pid_t pid;
  int in_fd, out_fd, err_fd; /* -1 when closed */
  buf_t inq;                 /* stdin bytes not yet written to the child */
  int eof_pending;           /* close stdin once inq is empty */
  uint32_t ack;              /* stdin bytes consumed since the last STDIN_ACK */
  int exited;                /* leader reaped and EXIT sent; pipes are drained and discarded */
  int signalled;             /* the host sent a signal: kill the rest of the group on exit */
} cmd_t;

static buf_t out;             /* frames waiting for the host */
static unsigned char *inbuf;  /* frames from the host */
static size_t in_len, in_cap;
static int host_eof;
static cmd_t **cmds;
static size_t ncmds, cmds_cap;
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
  if (out.cap > 4 * READ_CHUNK) buf_free(&out); /* give a burst's memory back */
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

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void close_stdin(cmd_t *c) {
  close_fd(&c->in_fd);
  c->ack += (uint32_t)c->inq.len; /* discarded bytes still free the host's window */
  buf_free(&c->inq);
  c->eof_pending = 0;
}

/* Reads once from a command's stdout/stderr into a frame (or discards after exit). 1 = more may follow. */
static int pump_output(cmd_t *c, int *fd, unsigned type) {
  if (c->exited) {
    static unsigned char sink[READ_CHUNK];
    ssize_t n = read(*fd, sink, sizeof sink);
    if (n > 0) return 1;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    close_fd(fd);
    return 0;
  }
  unsigned char *p = buf_reserve(&out, HDR + READ_CHUNK);
  ssize_t n = read(*fd, p + HDR, READ_CHUNK);
  if (n > 0) {
    put_u32(p, (uint32_t)n);
    p[4] = (unsigned char)type;
    put_u32(p + 5, c->id);
    out.len += HDR + (size_t)n;
    return 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  close_fd(fd); /* EOF or error */
  return 0;
}

static void pump_stdin(cmd_t *c) {
  while (c->in_fd >= 0 && c->inq.len > 0) {
    ssize_t n = write(c->in_fd, c->inq.data + c->inq.start, c->inq.len);
    if (n > 0) {
      buf_consume(&c->inq, (size_t)n);
      c->ack += (uint32_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    close_stdin(c); /* EPIPE: the command closed its stdin */
    return;
  }
  if (c->in_fd >= 0 && c->inq.len == 0 && c->eof_pending) close_stdin(c);
}

static void on_exit_status(cmd_t *c, int status) {
  /* The leader has exited, so everything it wrote is already in the pipes: forward it first. */
  size_t drained = 0;
  while (c->out_fd >= 0 && drained < DRAIN_MAX && pump_output(c, &c->out_fd, T_STDOUT)) drained += READ_CHUNK;
  drained = 0;
  while (c->err_fd >= 0 && drained < DRAIN_MAX && pump_output(c, &c->err_fd, T_STDERR)) drained += READ_CHUNK;
  if (c->ack) {
    send_u32(T_STDIN_ACK, c->id, c->ack);
    c->ack = 0;
  }
  unsigned char *p = frame_begin(T_EXIT, c->id, 5);
  if (WIFSIGNALED(status)) {
    p[0] = 1;
    put_u32(p + 1, (uint32_t)WTERMSIG(status));
  } else {
    p[0] = 0;
    put_u32(p + 1, (uint32_t)WEXITSTATUS(status));
  }
  c->exited = 1;
  close_stdin(c);
  c->ack = 0;
  /* Repeat a few times: a member may be between fork and its child joining the signal's view. */
  if (c->signalled)
    for (int i = 0; i < 16 && kill(-c->pid, SIGKILL) == 0; i++) {
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
    if (c->exited && c->out_fd < 0 && c->err_fd < 0) {
      close_fd(&c->in_fd);
      buf_free(&c->inq);
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

static void close_other_fds(int keep) {
  /* close_range(2) since Linux 5.9; fall back to a loop */
  if (keep > 3 && syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) == 0 &&
      syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
    return;
  if (keep == 3 && syscall(SYS_close_range, 4u, ~0u, 0u) == 0) return;
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 65536;
  if (max > 1 << 20) max = 1 << 20;
  for (long fd = 3; fd < max; fd++)
    if (fd != keep) close((int)fd);
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

/* SPAWN payload: u8 flags | u32 uid | u32 gid | u16 argc | u16 envc | cwd\0 | argv[argc]\0 | env[envc]\0 */
static void do_spawn(uint32_t id, unsigned char *p, size_t len) {
  if (find_cmd(id)) {
    send_error(id, EEXIST, "request id %u is already in use", id);
    return;
  }
  if (len < 13) {
    send_error(id, EINVAL, "malformed SPAWN payload");
    return;
  }
  unsigned flags = p[0];
  uid_t uid = (flags & SPAWN_HAS_UID) ? (uid_t)get_u32(p + 1) : default_uid;
  gid_t gid = (flags & SPAWN_HAS_GID) ? (gid_t)get_u32(p + 5) : default_gid;
  size_t argc = ((size_t)p[9] << 8) | p[10];
  size_t envc = ((size_t)p[11] << 8) | p[12];
  size_t off = 13;
  char *cwd = NULL;
  char **argv = calloc(argc + 1, sizeof *argv);
  char **given = calloc(envc + 1, sizeof *given);
  char **envp = NULL;
  if (!argv || !given) die("out of memory");
  if (argc == 0 || take_strings(p, len, &off, &cwd, 1) || take_strings(p, len, &off, argv, argc) ||
      take_strings(p, len, &off, given, envc) || off != len || argv[0][0] == 0) {
    send_error(id, EINVAL, "malformed SPAWN payload");
    goto done;
  }
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

  int inp[2] = {-1, -1}, outp[2] = {-1, -1}, errp[2] = {-1, -1}, ctl[2] = {-1, -1};
  if (pipe2(inp, O_CLOEXEC) || pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) || pipe2(ctl, O_CLOEXEC)) {
    int e = errno;
    int *fds[] = {inp, outp, errp, ctl};
    for (int i = 0; i < 4; i++) {
      close_fd(&fds[i][0]);
      close_fd(&fds[i][1]);
    }
    send_error(id, e, "spawn %s: pipe: %s", argv[0], strerror(e));
    goto done;
  }

  pid_t pid = fork();
  if (pid == 0) {
    /* child: own process group, default signals, pipes on 0/1/2, nothing else open */
    sigset_t none;
    sigemptyset(&none);
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(inp[0], 0) < 0 || dup2(outp[1], 1) < 0 || dup2(errp[1], 2) < 0) child_fail(ctl[1], STAGE_SETUP);
    close_other_fds(ctl[1]);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != child_nofile_soft) {
      rl.rlim_cur = child_nofile_soft;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (is_root && (uid != 0 || gid != 0)) {
      gid_t groups[1] = {gid};
      if (setgroups(1, groups) || setgid(gid) || setuid(uid)) child_fail(ctl[1], STAGE_USER);
      if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid) {
        errno = EPERM;
        child_fail(ctl[1], STAGE_USER);
      }
    }
    if (cwd[0] && chdir(cwd)) child_fail(ctl[1], STAGE_CWD);
    environ = envp;
    execvp(argv[0], argv);
    child_fail(ctl[1], STAGE_EXEC);
  }
  int fork_errno = errno;
  close(inp[0]);
  close(outp[1]);
  close(errp[1]);
  close(ctl[1]);
  if (pid < 0) {
    close(inp[1]);
    close(outp[0]);
    close(errp[0]);
    close(ctl[0]);
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
    close(inp[1]);
    close(outp[0]);
    close(errp[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    const char *what = msg[0] == STAGE_CWD ? cwd : argv[0];
    send_error(id, msg[1], "spawn %s: %s %s: %s", argv[0], stage_name(msg[0]), what, strerror(msg[1]));
    goto done;
  }
  set_nonblock(inp[1]);
  set_nonblock(outp[0]);
  set_nonblock(errp[0]);
  cmd_t *c = calloc(1, sizeof *c);
  if (!c) die("out of memory");
  c->id = id;
  c->pid = pid;
  c->signalled = (flags & SPAWN_KILL_GROUP_ON_EXIT) != 0;
  c->in_fd = inp[1];
  c->out_fd = outp[0];
  c->err_fd = errp[0];
  if (!(flags & SPAWN_STDIN)) close_fd(&c->in_fd);
  if (ncmds == cmds_cap) {
    cmds_cap = cmds_cap ? cmds_cap * 2 : 64;
    cmds = realloc(cmds, cmds_cap * sizeof *cmds);
    if (!cmds) die("out of memory");
  }
  cmds[ncmds++] = c;
  send_u32(T_SPAWNED, id, (uint32_t)pid);
done:
  free(argv);
  free(given);
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

/* Parses the common head of a file request: u8 flags | u32 a | u32 uid | u32 gid | path\0. */
static char *file_head(uint32_t id, unsigned char *p, size_t len, unsigned *flags, uint32_t *a, uid_t *uid,
                       gid_t *gid, size_t *off) {
  if (len < 14) goto bad;
  *flags = p[0];
  *a = get_u32(p + 1);
  *uid = (*flags & FILE_HAS_UID) ? (uid_t)get_u32(p + 5) : default_uid;
  *gid = (*flags & FILE_HAS_GID) ? (gid_t)get_u32(p + 9) : default_gid;
  char *path = (char *)p + 13;
  unsigned char *z = memchr(path, 0, len - 13);
  if (!z) goto bad;
  *off = (size_t)(z - p) + 1;
  if (path[0] != '/') {
    send_error(id, EINVAL, "path must be absolute: %s", path);
    return NULL;
  }
  return user_allowed(id, *uid, *gid) ? path : NULL;
bad:
  send_error(id, EINVAL, "malformed file request");
  return NULL;
}

/* WRITE_FILE payload: u8 flags | u32 mode | u32 uid | u32 gid | path\0 | bytes */
static void do_write_file(uint32_t id, unsigned char *p, size_t len) {
  unsigned flags;
  uint32_t mode;
  uid_t uid;
  gid_t gid;
  size_t off;
  char *path = file_head(id, p, len, &flags, &mode, &uid, &gid, &off);
  if (!path) return;
  if (fs_become(uid, gid)) {
    send_error(id, errno, "write %s: cannot act as %u:%u: %s", path, (unsigned)uid, (unsigned)gid, strerror(errno));
    return;
  }
  const char *step = "mkdir";
  int fd = -1;
  if (mkdir_parents(path)) goto fail;
  step = "open";
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK,
            (flags & FILE_HAS_MODE) ? (mode & 07777) : 0644);
  if (fd < 0) goto fail;
  struct stat st;
  step = "open";
  if (fstat(fd, &st)) goto fail;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    goto fail;
  }
  step = "chmod";
  if ((flags & FILE_HAS_MODE) && fchmod(fd, mode & 07777)) goto fail;
  step = "write";
  if (write_all(fd, p + off, len - off)) goto fail;
  close(fd);
  fs_restore();
  send_frame(T_FILE_WRITTEN, id, NULL, 0);
  return;
fail: {
  int e = errno;
  if (fd >= 0) close(fd);
  fs_restore();
  send_error(id, e, "write %s: %s: %s", path, step, e == EINVAL ? "not a regular file" : strerror(e));
}
}

/* READ_FILE payload: u8 flags | u32 max bytes | u32 uid | u32 gid | path\0 */
static void do_read_file(uint32_t id, unsigned char *p, size_t len) {
  unsigned flags;
  uint32_t max;
  uid_t uid;
  gid_t gid;
  size_t off;
  char *path = file_head(id, p, len, &flags, &max, &uid, &gid, &off);
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
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  int e = errno;
  fs_restore();
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

static void handle_frame(unsigned type, uint32_t id, unsigned char *p, size_t len) {
  cmd_t *c;
  switch (type) {
  case T_PING:
    send_frame(T_PONG, id, p, len);
    break;
  case T_SPAWN:
    do_spawn(id, p, len);
    break;
  case T_STDIN:
    c = find_cmd(id);
    if (!c || c->exited) break; /* raced with its exit */
    if (c->in_fd < 0 || c->eof_pending) {
      c->ack += (uint32_t)len; /* nobody reads it: drop, but free the window */
      break;
    }
    if (c->inq.len + len > STDIN_QUEUE_MAX) {
      send_error(id, ENOBUFS, "stdin queue over %u bytes; the host must wait for STDIN_ACK", STDIN_QUEUE_MAX);
      close_stdin(c);
      break;
    }
    memcpy(buf_reserve(&c->inq, len), p, len);
    c->inq.len += len;
    pump_stdin(c);
    break;
  case T_STDIN_EOF:
    c = find_cmd(id);
    if (!c || c->exited) break;
    c->eof_pending = 1;
    pump_stdin(c);
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
  case T_WRITE_FILE:
    do_write_file(id, p, len);
    break;
  case T_READ_FILE:
    do_read_file(id, p, len);
    break;
  default:
    fprintf(stderr, "pai-agent: protocol error: unknown frame type 0x%02x\n", type);
    send_error(0, EPROTO, "protocol error: unknown frame type 0x%02x", type);
    flush_out();
    kill_all();
    _exit(2);
  }
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
    while (in_len - off >= HDR) {
      uint32_t plen = get_u32(inbuf + off);
      if (plen > MAX_PAYLOAD) {
        fprintf(stderr, "pai-agent: protocol error: frame of %u bytes (max %u)\n", plen, MAX_PAYLOAD);
        send_error(0, EPROTO, "protocol error: frame of %u bytes exceeds %u", plen, MAX_PAYLOAD);
        flush_out();
        kill_all();
        _exit(2);
      }
      if (in_len - off < HDR + plen) break;
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
    } else if (strcmp(argv[i], "--version") == 0) {
      fprintf(stderr, "pai-agent %s (protocol %d)\n", AGENT_VERSION, PROTOCOL_VERSION);
      exit(0);
    } else {
      goto usage;
    }
  }
  return;
usage:
  fprintf(stderr, "usage: pai-agent [--user UID:GID | --user self] | --idle | --version\n");
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
  size_t *pmap = NULL; /* pollfd index -> command index * 3 + stream */
  size_t pcap = 0;
  int stopping = 0;

  while (!stopping) {
    if (flush_out()) break;
    size_t need = 3 + ncmds * 3;
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
    for (size_t i = 0; i < ncmds; i++) {
      cmd_t *c = cmds[i];
      if (c->out_fd >= 0 && (!paused || c->exited)) {
        pmap[np] = i * 3 + 1;
        pfds[np++] = (struct pollfd){.fd = c->out_fd, .events = POLLIN};
      }
      if (c->err_fd >= 0 && (!paused || c->exited)) {
        pmap[np] = i * 3 + 2;
        pfds[np++] = (struct pollfd){.fd = c->err_fd, .events = POLLIN};
      }
      if (c->in_fd >= 0 && c->inq.len > 0) {
        pmap[np] = i * 3;
        pfds[np++] = (struct pollfd){.fd = c->in_fd, .events = POLLOUT};
      }
    }
    if (host_eof && ncmds == 0 && out.len == 0) break;
    int r = poll(pfds, np, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    /* 1. commands' pipes (the command table does not change in this pass) */
    for (size_t k = 3; k < np; k++) {
      if (!pfds[k].revents) continue;
      cmd_t *c = cmds[pmap[k] / 3];
      switch (pmap[k] % 3) {
      case 0: pump_stdin(c); break;
      case 1: if (c->out_fd >= 0) pump_output(c, &c->out_fd, T_STDOUT); break;
      case 2: if (c->err_fd >= 0) pump_output(c, &c->err_fd, T_STDERR); break;
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
    /* 4. stdin acknowledgements, coalesced per round */
    for (size_t i = 0; i < ncmds; i++) {
      cmd_t *c = cmds[i];
      if (c->ack && !c->exited) {
        send_u32(T_STDIN_ACK, c->id, c->ack);
        c->ack = 0;
      }
    }
    remove_finished();
  }

  /*
   * Host gone or told to stop: take every command down with us, reap them (so no zombie is left to a slow
   * init) and flush what we can, for at most about a second.
   */
  kill_all();
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
