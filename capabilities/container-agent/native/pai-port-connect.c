/*
 * pai-port-connect — connects to ports on a container's loopback from the host, and hands each connected socket to
 * its parent, so a preview's bytes go straight between the parent (the preview gateway) and the server in the
 * container: no process relays them. The container keeps its network `none`: this program only enters the
 * container's network namespace (where only loopback exists) and connects to 127.0.0.1 there.
 *
 * Usage: pai-port-connect NETNS_PATH     (with a Node IPC channel: the fd named by NODE_CHANNEL_FD)
 *
 * NETNS_PATH is the container's network namespace as its engine names it (Docker's SandboxKey, e.g.
 * /var/run/docker/netns/1a2b3c4d5e6f). The program opens it and enters it with setns(2) (root's privilege), then
 * becomes nobody (65534:65534, no supplementary groups), sets no_new_privs and a seccomp filter allowing only the
 * system calls of its loop: it can make sockets and connect them in that namespace, and nothing else.
 *
 * The channel is the one Node's child_process makes with an `ipc` stdio entry and its JSON serialization: one JSON
 * object per line each way; a line that carries a descriptor is Node's handle message, which Node turns into a
 * `net.Socket` given to the child's 'message' listener with the message's `msg`.
 *
 *   parent -> here   {"id":N,"port":P}          connect to 127.0.0.1:P (P 1..65535, N a positive integer)
 *                    {"cmd":"NODE_HANDLE_ACK"}  Node's receipt of a socket: ignored, as is any other line
 *   here -> parent   {"ready":1}                the namespace is entered and the privileges dropped (first line)
 *                    {"cmd":"NODE_HANDLE","type":"net.Socket","msg":{"id":N}}   + the connected socket (SCM_RIGHTS)
 *                    {"id":N,"error":"ECONNREFUSED"}   it could not connect (an errno name)
 *
 * Every connect is non-blocking and one poll() loop serves the channel and all of them, so a port whose server does
 * not accept (a full backlog) delays only its own connections, which fail with ETIMEDOUT after CONNECT_TIMEOUT_MS.
 * At most MAX_PENDING connects are under way; past that a request fails at once with EAGAIN. The program reads
 * nothing from any connected socket: it hands the descriptor over and closes its own copy.
 *
 * Exit status: 0 when the parent closes the channel; 64 for bad usage; 70 when the namespace cannot be entered or
 * the privileges dropped (the parent then connects through the container's agent instead); 74 on a channel error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "least-privilege.h"

#define MAX_PENDING 64
#define CONNECT_TIMEOUT_MS 10000
#define MAX_LINE 256
#define NOBODY 65534

/* The system calls of the loop below. */
static const long PORT_CONNECT_SYSCALLS[] = {
    SYS_read,       SYS_write,     SYS_sendmsg,       SYS_socket,     SYS_connect,
    SYS_getsockopt, SYS_close,     SYS_ppoll,         SYS_clock_gettime, SYS_exit,
    SYS_exit_group, SYS_rt_sigreturn,
#ifdef SYS_poll
    SYS_poll,
#endif
};

struct pending {
  int fd; /* -1: a free slot */
  long long id;
  int64_t deadline_ms;
};

static int channel = -1;
static struct pending pending[MAX_PENDING];

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Writes all of `text`; a channel that cannot take it ends the program. */
static void say(const char *text, size_t length, int fd_to_pass) {
  struct iovec iov = {(void *)text, length};
  union {
    char bytes[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  struct msghdr message = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd_to_pass >= 0) {
    memset(&control, 0, sizeof control);
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd_to_pass, sizeof(int));
  }
  /* The channel is blocking and each line is far below a socket's buffer: one sendmsg writes it whole. */
  for (;;) {
    ssize_t n = sendmsg(channel, &message, MSG_NOSIGNAL);
    if (n == (ssize_t)length) return;
    if (n < 0 && errno == EINTR) continue;
    _exit(74);
  }
}

static const char *errno_name(int error) {
  switch (error) {
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNRESET: return "ECONNRESET";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOBUFS: return "ENOBUFS";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case ENETUNREACH: return "ENETUNREACH";
    case EAGAIN: return "EAGAIN";
    case EINVAL: return "EINVAL";
    default: return "EIO";
  }
}

static void fail(long long id, int error) {
  char line[MAX_LINE];
  int length = snprintf(line, sizeof line, "{\"id\":%lld,\"error\":\"%s\"}\n", id, errno_name(error));
  say(line, (size_t)length, -1);
}

static void hand_over(struct pending *slot) {
  char line[MAX_LINE];
  int length = snprintf(line, sizeof line,
                        "{\"cmd\":\"NODE_HANDLE\",\"type\":\"net.Socket\",\"msg\":{\"id\":%lld}}\n", slot->id);
  say(line, (size_t)length, slot->fd);
  close(slot->fd);
  slot->fd = -1;
}

static void settle(struct pending *slot, int error) {
  if (error == 0) {
    hand_over(slot);
    return;
  }
  close(slot->fd);
  slot->fd = -1;
  fail(slot->id, error);
}

static void start_connect(long long id, long port) {
  struct pending *slot = NULL;
  for (int i = 0; i < MAX_PENDING && !slot; i++)
    if (pending[i].fd < 0) slot = &pending[i];
  if (!slot) {
    fail(id, EAGAIN);
    return;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail(id, errno);
    return;
  }
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  *slot = (struct pending){.fd = fd, .id = id, .deadline_ms = now_ms() + CONNECT_TIMEOUT_MS};
  if (connect(fd, (struct sockaddr *)&address, sizeof address) == 0) settle(slot, 0);
  else if (errno != EINPROGRESS) settle(slot, errno);
}

/* The integer after `"key":` in `line`, or -1 when there is none (or it is not a plain positive integer). */
static long long field(const char *line, const char *key) {
  const char *at = strstr(line, key);
  if (!at) return -1;
  at += strlen(key);
  if (*at < '0' || *at > '9') return -1;
  long long value = 0;
  for (; *at >= '0' && *at <= '9'; at++) {
    if (value > (INT64_MAX - 9) / 10) return -1;
    value = value * 10 + (*at - '0');
  }
  return value;
}

static void request(const char *line) {
  long long id = field(line, "\"id\":");
  long long port = field(line, "\"port\":");
  if (id <= 0 || port < 0) return; /* Node's own messages (NODE_HANDLE_ACK) and anything else */
  if (port < 1 || port > 65535) {
    fail(id, EINVAL);
    return;
  }
  start_connect(id, (long)port);
}

/* Reads what the channel has and serves each whole line; returns 0 when the parent has closed it. */
static int read_channel(char *buffer, size_t *held) {
  ssize_t n = read(channel, buffer + *held, MAX_LINE - *held);
  if (n == 0) return 0;
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  *held += (size_t)n;
  char *start = buffer, *newline;
  while ((newline = memchr(start, '\n', *held - (size_t)(start - buffer)))) {
    *newline = '\0';
    request(start);
    start = newline + 1;
  }
  *held -= (size_t)(start - buffer);
  memmove(buffer, start, *held);
  if (*held == MAX_LINE) *held = 0; /* a line this long is none of ours: dropped */
  return 1;
}

static int enter_namespace(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int entered = setns(fd, CLONE_NEWNET);
  close(fd);
  return entered;
}

int main(int argc, char **argv) {
  const char *channel_fd = getenv("NODE_CHANNEL_FD");
  if (argc != 2 || !channel_fd || !*channel_fd) {
    fprintf(stderr, "usage: pai-port-connect NETNS_PATH (with a Node IPC channel in NODE_CHANNEL_FD)\n");
    return 64;
  }
  channel = atoi(channel_fd);
  /* Node leaves the child's end of the channel non-blocking: here it blocks, and poll() says when it is readable. */
  int flags = fcntl(channel, F_GETFL);
  if (flags < 0 || fcntl(channel, F_SETFL, flags & ~O_NONBLOCK) != 0) return 74;
  if (enter_namespace(argv[1]) != 0) {
    fprintf(stderr, "pai-port-connect: cannot enter %s: %s\n", argv[1], strerror(errno));
    return 70;
  }
  if (lp_drop_to(NOBODY, NOBODY) != 0 ||
      lp_restrict_syscalls(PORT_CONNECT_SYSCALLS, sizeof PORT_CONNECT_SYSCALLS / sizeof *PORT_CONNECT_SYSCALLS) != 0) {
    fprintf(stderr, "pai-port-connect: cannot drop privileges: %s\n", strerror(errno));
    return 70;
  }
  for (int i = 0; i < MAX_PENDING; i++) pending[i].fd = -1;
  say("{\"ready\":1}\n", 12, -1);

  char buffer[MAX_LINE];
  size_t held = 0;
  struct pollfd fds[1 + MAX_PENDING];
  struct pending *polled[1 + MAX_PENDING];
  for (;;) {
    int count = 0;
    fds[count++] = (struct pollfd){channel, POLLIN, 0};
    int64_t now = now_ms(), wait_ms = -1;
    for (int i = 0; i < MAX_PENDING; i++) {
      if (pending[i].fd < 0) continue;
      if (pending[i].deadline_ms <= now) {
        settle(&pending[i], ETIMEDOUT);
        continue;
      }
      int64_t left = pending[i].deadline_ms - now;
      if (wait_ms < 0 || left < wait_ms) wait_ms = left;
      polled[count] = &pending[i];
      fds[count++] = (struct pollfd){pending[i].fd, POLLOUT, 0};
    }
    if (poll(fds, (nfds_t)count, (int)wait_ms) < 0) {
      if (errno == EINTR) continue;
      return 74;
    }
    for (int i = 1; i < count; i++) {
      if (!fds[i].revents) continue;
      int error = 0;
      socklen_t length = sizeof error;
      if (getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
      settle(polled[i], error);
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (!read_channel(buffer, &held)) return 0;
    }
  }
}
