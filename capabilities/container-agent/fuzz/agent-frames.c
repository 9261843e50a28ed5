/*
 * agent-frames.c — libFuzzer target: the frames pai-agent reads from the host, `u32 BE payload length | u8 type |
 * u32 BE request id | payload`, and the payloads it decodes.
 *
 * The agent's own source is included (build.sh renames its main: -Dmain=pai_agent_main). The input is a frame
 * stream: it is split as read_host splits it (take_frame), and each payload — copied into a buffer of exactly its
 * size, so a read past it is caught — goes to the decoder of its type: parse_spawn (cwd, argv, env), parse_file_head
 * (WRITE_FILE, READ_FILE), parse_listen and parse_connect (the socket path and token, the header line built from
 * them). Nothing is executed, opened or connected. What a decoder accepts is checked: every string it hands on lies
 * within the payload, paths are absolute, a socket path fits sun_path, a header line is `<greeting> <token>\n`.
 */
#include "../native/pai-agent.c"

#define CHECK(cond)                                                                                             \
  do {                                                                                                          \
    if (!(cond)) {                                                                                              \
      fprintf(stderr, "agent-frames: check failed: %s (line %d)\n", #cond, __LINE__);                         \
      abort();                                                                                                  \
    }                                                                                                           \
  } while (0)

/* s is a NUL-terminated string inside [p, p + len). */
static void check_within(const unsigned char *p, size_t len, const char *s) {
  CHECK(s && (const unsigned char *)s >= p && (const unsigned char *)s < p + len);
  CHECK(memchr(s, 0, (size_t)(p + len - (const unsigned char *)s)) != NULL);
}

static void check_target(const host_target_t *t, const char *greeting) {
  if (t->sock.sun_path[0] == 0) return;
  CHECK(t->sock.sun_family == AF_UNIX);
  CHECK(memchr(t->sock.sun_path, 0, sizeof t->sock.sun_path) != NULL);
  size_t g = strlen(greeting);
  CHECK(t->header_len > g + 2 && t->header_len < sizeof t->header && t->header_len <= g + 1 + MAX_TOKEN + 1);
  CHECK(memcmp(t->header, greeting, g) == 0 && t->header[g] == ' ' && t->header[t->header_len - 1] == '\n');
  for (size_t k = g + 1; k < t->header_len - 1; k++) CHECK(t->header[k] > 0x20 && t->header[k] < 0x7f);
}

static void decode(unsigned type, uint32_t id, unsigned char *p, size_t len) {
  switch (type) {
  case T_SPAWN: {
    spawn_request_t r;
    if (parse_spawn(p, len, &r) == 0) {
      check_within(p, len, r.cwd);
      CHECK(r.argv && r.argv[0] && r.argv[0][0] != 0);
      size_t argc = 0;
      for (; r.argv[argc]; argc++) check_within(p, len, r.argv[argc]);
      CHECK(argc == (((size_t)p[9] << 8) | p[10]));
      for (size_t k = 0; k < r.envc; k++) check_within(p, len, r.env[k]);
      CHECK(r.env[r.envc] == NULL);
    }
    free(r.argv);
    free(r.env);
    break;
  }
  case T_WRITE_FILE:
  case T_READ_FILE: {
    file_request_t r;
    int parsed = parse_file_head(p, len, &r);
    CHECK(parsed == 0 || parsed == -1 || parsed == -2);
    if (parsed != -1) {
      check_within(p, len, r.root);
      check_within(p, len, r.path);
      CHECK(r.off <= len);
    }
    if (parsed == 0) CHECK(r.root[0] == '/' && r.path[0] == '/');
    break;
  }
  case T_LISTEN: {
    host_target_t t;
    if (parse_listen(p, len, &t) == 0) {
      CHECK(len >= 2);
      CHECK((len > 2) == (t.sock.sun_path[0] != 0));
      check_target(&t, "PAI-EGRESS/1");
    }
    break;
  }
  case T_CONNECT: {
    unsigned port;
    host_target_t t;
    if (parse_connect(id, p, len, &port, &t) == 0) {
      CHECK(port >= 1 && port <= 65535 && id != 0 && id < STREAM_ID_BASE);
      if (len > 2) check_target(&t, "PAI-AGENT/1");
    }
    break;
  }
  default: break; /* the others carry bytes for a command or a connection, or a u32 checked by its length */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t off = 0;;) {
    uint32_t plen;
    int whole = take_frame(data + off, size - off, &plen);
    if (whole < 0) CHECK(plen > MAX_PAYLOAD);
    if (whole <= 0) break; /* the agent exits on an oversize frame; a partial one waits for more bytes */
    CHECK(size - off >= HDR + (size_t)plen);
    unsigned char *payload = malloc(plen ? plen : 1);
    CHECK(payload != NULL);
    memcpy(payload, data + off + HDR, plen);
    decode(data[off + 4], get_u32(data + off + 5), payload, plen);
    free(payload);
    off += HDR + plen;
  }
  return 0;
}
