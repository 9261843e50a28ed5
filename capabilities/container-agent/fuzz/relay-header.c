/*
 * relay-header.c — libFuzzer target: what a program in a container sends to pai-egress-relay's socket.
 *
 * The relay's own source is included (build.sh renames its main: -Dmain=pai_egress_relay_main), so the code under
 * test is the shipped code: conn_open takes one end of a socketpair as an accepted connection, and its events run as
 * the relay's loop runs them (conn_events, then conn_event) until it is closed or waits. Two tokens are admitted,
 * the way the parent admits them (handle_command ADMIT).
 *
 * Input: u8 chunking | u8 ending | the bytes the program sends.
 *   chunking  the size of each write (CHUNKS[byte % count]; 0: all at once; at least 1/MAX_WRITES of the
 *             input); events run after each write
 *   ending    bit 2: the parent CLOSEs the connection; bit 0: one waiting for the parent's decision is refused
 *             (REFUSE); bit 1: the program then shuts its writing side down (else it closes)
 *
 * After each input the control frames the relay wrote for the parent are checked (a HEAD within MAX_HEAD bytes and
 * without its blank line, OPEN, HEAD or TOO_BIG at most once and in order, CLOSED only for an OPENed connection),
 * and so is its state: no connection left, none counted as unidentified. fd 0 is an empty pipe (the parent has
 * nothing more to say), fd 1 /dev/null.
 */
#include "../native/pai-egress-relay.c"

static const char *const TOKENS[] = {"fuzz-token-0123456789abcdef", "A"};
static const size_t CHUNKS[] = {0, 1, 2, 3, 7, 16, 100, 512, 1000, 4096, 8191, 16384, 32768};
/* The most writes of one input: a large head comes in larger pieces, so each input stays fast to run. */
#define MAX_WRITES 64u
static const char ANSWER[] = "HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n";

#define CHECK(cond)                                                                                             \
  do {                                                                                                          \
    if (!(cond)) {                                                                                              \
      fprintf(stderr, "relay-header: check failed: %s (line %d)\n", #cond, __LINE__);                         \
      abort();                                                                                                  \
    }                                                                                                           \
  } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  signal(SIGPIPE, SIG_IGN);
  int parent[2];
  CHECK(pipe2(parent, O_NONBLOCK | O_CLOEXEC) == 0);
  CHECK(dup2(parent[0], 0) == 0); /* parent[1] stays open: reads find nothing (EAGAIN), never EOF */
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  CHECK(null >= 0 && dup2(null, 1) == 1);
  CHECK(fcntl(0, F_SETFL, O_NONBLOCK) == 0 && fcntl(1, F_SETFL, O_NONBLOCK) == 0);
  in = xrealloc(NULL, HDR + MAX_CONTROL_PAYLOAD);
  for (size_t i = 0; i < sizeof TOKENS / sizeof *TOKENS; i++)
    CHECK(handle_command(IN_ADMIT, (uint32_t)(7 + i), (const unsigned char *)TOKENS[i], strlen(TOKENS[i])) == 0);
  return 0;
}

/* Runs the connection's events as the relay's poll loop would, until it is closed or waits. */
static void run_events(conn_t *c) {
  for (int rounds = 0; rounds < 1000 && c->fd >= 0; rounds++) {
    struct pollfd p = {.fd = c->fd, .events = conn_events(c, 0)};
    if (poll(&p, 1, 0) <= 0) return;
    conn_event(c, 0, p.revents);
  }
}

/* Checks the control frames the relay wrote for the parent about one connection. */
static void check_out(const unsigned char *o, size_t n) {
  int opened = 0, headed = 0, closed = 0;
  for (size_t off = 0; off < n;) {
    CHECK(n - off >= HDR);
    uint32_t len = get_u32(o + off);
    unsigned type = o[off + 4];
    CHECK(n - off - HDR >= len);
    const unsigned char *p = o + off + HDR;
    switch (type) {
    case OUT_OPEN:
      CHECK(!opened && len == 4 && get_u32(p) >= 7 && get_u32(p) < 7 + sizeof TOKENS / sizeof *TOKENS);
      opened = 1;
      break;
    case OUT_HEAD:
      CHECK(opened && !headed && !closed && len <= MAX_HEAD);
      CHECK(len < 4 || !memmem(p, len, "\r\n\r\n", 4));
      headed = 1;
      break;
    case OUT_TOO_BIG:
      CHECK(opened && !headed && !closed && len == 0);
      headed = 1;
      break;
    case OUT_CLOSED:
      CHECK(opened && !closed && len == 16);
      closed = 1;
      break;
    default: CHECK(!"a frame the relay does not send before CONNECT");
    }
    off += HDR + len;
  }
  CHECK(opened == closed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t chunk = CHUNKS[data[0] % (sizeof CHUNKS / sizeof *CHUNKS)];
  unsigned ending = data[1];
  data += 2;
  size -= 2;
  if (chunk == 0) chunk = size ? size : 1;
  if (chunk < size / MAX_WRITES + 1) chunk = size / MAX_WRITES + 1;

  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
  int peer = sv[1];
  conn_open(sv[0]);
  CHECK(nconns == 1);
  conn_t *c = conns[0];
  for (size_t off = 0; off < size && c->fd >= 0;) {
    size_t n = size - off < chunk ? size - off : chunk;
    ssize_t w = send(peer, data + off, n, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN) {
      CHECK(errno == EPIPE || errno == ECONNRESET); /* the relay closed its end */
      break;
    }
    if (w > 0) off += (size_t)w;
    run_events(c);
    /* The socket is full and the relay reads no more (it waits for the parent): the program waits too. */
    if (w < 0 && c->fd >= 0 && c->state != S_HEADER && c->state != S_HEAD) break;
  }
  if (c->fd >= 0 && (ending & 4)) CHECK(handle_command(IN_CLOSE, c->id, NULL, 0) == 0);
  if (c->fd >= 0 && c->state == S_DECIDING && (ending & 1))
    CHECK(handle_command(IN_REFUSE, c->id, (const unsigned char *)ANSWER, sizeof ANSWER - 1) == 0);
  if (ending & 2) shutdown(peer, SHUT_WR);
  else close(peer);
  run_events(c);
  if (c->fd >= 0) conn_close(c); /* the parent's CLOSE, or its exit */
  if (ending & 2) close(peer);
  remove_closed();

  check_out(out, out_len);
  CHECK(nconns == 0 && unidentified == 0 && !parent_gone);
  out_len = 0;
  refused_count = 0;
  counts_dirty = 0;
  return 0;
}
