import { ContainerAgentError, protocolError } from "./container-agent-error.ts";

/**
 * The wire protocol between the host and `pai-agent` (capabilities/container-agent/native/pai-agent.c).
 *
 * One byte stream each way (the agent's stdin and stdout). Every frame is
 * `u32 BE payload length | u8 type | u32 BE request id | payload`, with payloads of at most
 * {@link MAX_FRAME_PAYLOAD_BYTES}. Host → agent types are below 0x80, agent → host types 0x80 and above.
 * Request id 0 is the connection itself (HELLO, connection errors); the host numbers its requests from 1 up to
 * {@link FIRST_STREAM_ID} − 1, and the agent numbers the connections it accepts from {@link FIRST_STREAM_ID}. A
 * connection the host opens with CONNECT keeps the CONNECT's request id.
 * Command output and connection bytes travel raw; the few structured payloads are fixed binary layouts (below).
 */
export const AGENT_PROTOCOL_VERSION = 4;

/** The first id of a connection the agent accepted; host request ids stay below it. */
export const FIRST_STREAM_ID = 0x80000000;

/** Bytes in a frame header: length (4), type (1), request id (4). */
export const FRAME_HEADER_BYTES = 9;

/** The largest payload either side accepts (1 MiB). A larger declared length is a protocol error. */
export const MAX_FRAME_PAYLOAD_BYTES = 1024 * 1024;

/** Frame types. Host → agent below 0x80, agent → host from 0x80. */
export const FrameType = {
  /** host → agent: any bytes, echoed back in PONG. */
  Ping: 0x01,
  /** host → agent: start a command (see {@link encodeSpawnPayload}); answered by SPAWNED or ERROR. */
  Spawn: 0x02,
  /** host → agent: bytes for the command's stdin; the agent acknowledges them with STDIN_ACK. */
  Stdin: 0x03,
  /** host → agent: close the command's stdin after what was sent. */
  StdinEof: 0x04,
  /** host → agent: u32 signal number, sent to the command's whole process group. */
  Signal: 0x05,
  /** host → agent: write a small file (see {@link encodeWriteFilePayload}); answered by FILE_WRITTEN or ERROR. */
  WriteFile: 0x06,
  /** host → agent: read a small file (see {@link encodeReadFilePayload}); FILE_DATA, FILE_MISSING or ERROR. */
  ReadFile: 0x07,
  /** host → agent: bytes for the command's fd 3 (SPAWN flag 0x20); acknowledged with PIPE_ACK. */
  PipeIn: 0x08,
  /**
   * host → agent: u16 port [| socket path\0 | token]; listen on the container's 127.0.0.1 (0: any port), relaying
   * connections to the host's socket when one is given. LISTENING or ERROR.
   */
  Listen: 0x09,
  /** host → agent (connection id): bytes to write to the connection; acknowledged with STREAM_ACK. */
  StreamData: 0x0a,
  /** host → agent (connection id): shut down the connection's write side once queued bytes are written. */
  StreamEof: 0x0b,
  /** host → agent (connection id): close the connection now. */
  StreamClose: 0x0c,
  /** host → agent (connection id): u32 count of STREAM_DATA bytes the host has consumed. */
  StreamAck: 0x0d,
  /**
   * host → agent: u16 port; connect to the container's 127.0.0.1:port. CONNECTED, after which the request id is a
   * connection (the STREAM_* frames both ways, as for an accepted one), or ERROR (ECONNREFUSED: nothing listens).
   * STREAM_CLOSE before CONNECTED abandons it (STREAM_CLOSED or ERROR then ends the id).
   */
  Connect: 0x0e,
  /** host → agent (a command's request id): u16 cols | u16 rows, the new size of the command's terminal. */
  Resize: 0x0f,
  /** agent → host, request id 0, sent once at start (see {@link decodeHelloPayload}). */
  Hello: 0x81,
  /** agent → host: the PING payload. */
  Pong: 0x82,
  /** agent → host: u32 pid of the started command. */
  Spawned: 0x83,
  /** agent → host: raw bytes the command wrote to stdout. */
  Stdout: 0x84,
  /** agent → host: raw bytes the command wrote to stderr. */
  Stderr: 0x85,
  /** agent → host: u8 kind (0 exited, 1 killed by a signal) | u32 exit code or signal number. Last frame. */
  Exit: 0x86,
  /** agent → host: u32 errno (0 if none) | UTF-8 message. Ends the request; on id 0 the agent is exiting. */
  Error: 0x87,
  /** agent → host: the file's bytes. */
  FileData: 0x88,
  /** agent → host: the file (or a parent directory) does not exist. */
  FileMissing: 0x89,
  /** agent → host: the file was written. */
  FileWritten: 0x8a,
  /** agent → host: u32 count of stdin bytes the agent consumed (written to the command or dropped). */
  StdinAck: 0x8b,
  /** agent → host: bytes the command wrote to fd 4. */
  PipeOut: 0x8c,
  /** agent → host: u32 count of PIPE_IN bytes the agent consumed. */
  PipeAck: 0x8d,
  /** agent → host: u16 port the agent listens on (answers LISTEN). */
  Listening: 0x8e,
  /** agent → host (new connection id): a connection was accepted on the listener. */
  StreamOpen: 0x8f,
  /** agent → host (connection id): bytes read from the connection. */
  StreamDataOut: 0x90,
  /** agent → host (connection id): the connection's peer shut down its write side. */
  StreamEofOut: 0x91,
  /** agent → host (connection id): the connection is closed; the last frame of the id. */
  StreamClosed: 0x92,
  /** agent → host (connection id): u32 count of STREAM_DATA bytes written to the connection. */
  StreamAckOut: 0x93,
  /** agent → host (the CONNECT's request id), empty: the connection is open. */
  Connected: 0x94,
} as const;

/** One of the {@link FrameType} numbers. */
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

/** The frame types the agent may send; anything else from it is a protocol error. */
export const AGENT_FRAME_TYPES: ReadonlySet<number> = new Set([
  FrameType.Hello,
  FrameType.Pong,
  FrameType.Spawned,
  FrameType.Stdout,
  FrameType.Stderr,
  FrameType.Exit,
  FrameType.Error,
  FrameType.FileData,
  FrameType.FileMissing,
  FrameType.FileWritten,
  FrameType.StdinAck,
  FrameType.PipeOut,
  FrameType.PipeAck,
  FrameType.Listening,
  FrameType.StreamOpen,
  FrameType.StreamDataOut,
  FrameType.StreamEofOut,
  FrameType.StreamClosed,
  FrameType.StreamAckOut,
  FrameType.Connected,
]);

/** The frame types the host may send. */
export const HOST_FRAME_TYPES: ReadonlySet<number> = new Set([
  FrameType.Ping,
  FrameType.Spawn,
  FrameType.Stdin,
  FrameType.StdinEof,
  FrameType.Signal,
  FrameType.WriteFile,
  FrameType.ReadFile,
  FrameType.PipeIn,
  FrameType.Listen,
  FrameType.StreamData,
  FrameType.StreamEof,
  FrameType.StreamClose,
  FrameType.StreamAck,
  FrameType.Connect,
  FrameType.Resize,
]);

const SPAWN_STDIN = 0x01;
const SPAWN_HAS_UID = 0x02;
const SPAWN_HAS_GID = 0x04;
const SPAWN_INHERIT_ENV = 0x08;
const SPAWN_KILL_GROUP_ON_EXIT = 0x10;
const SPAWN_PIPE = 0x20;
const SPAWN_PTY = 0x40;
const FILE_HAS_UID = 0x01;
const FILE_HAS_GID = 0x02;
const FILE_HAS_MODE = 0x04;
const FILE_CHECK_ONLY = 0x08;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function invalid(message: string): ContainerAgentError {
  return new ContainerAgentError("INVALID_ARGUMENT", message);
}

function cString(value: string, what: string): Uint8Array {
  if (value.includes("\0")) throw invalid(`${what} must not contain a NUL character`);
  const bytes = encoder.encode(value);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

function checkId(value: number | undefined, what: string): number {
  if (value === undefined) return 0;
  if (!Number.isInteger(value) || value < 0 || value > 0xfffffffe) throw invalid(`${what} must be a uint32`);
  return value;
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** What the host asks the agent to run. */
export interface SpawnRequest {
  /** Program and arguments; the program is looked up in the command's `PATH`. */
  argv: readonly string[];
  /** Working directory; empty or absent means the agent's own. */
  cwd?: string | undefined;
  /** Environment entries, over the agent's environment when `inheritEnv` is true. */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** Start from the agent's environment. @default true */
  inheritEnv?: boolean | undefined;
  /** User to run as; absent means the agent's default (see HELLO). */
  uid?: number | undefined;
  /** Group to run as; absent means the agent's default. */
  gid?: number | undefined;
  /** Keep a pipe open to the command's stdin (else it reads EOF at once). */
  stdin: boolean;
  /** SIGKILL what is left of the command's process group when the command exits (SPAWN flag 0x10). */
  killGroupOnExit?: boolean | undefined;
  /** Give the command fd 3 (PIPE_IN bytes) and fd 4 (PIPE_OUT bytes) (SPAWN flag 0x20). */
  pipe?: boolean | undefined;
  /**
   * Run the command on a new pseudo-terminal of this size (SPAWN flag 0x40): its stdin, stdout and stderr, the
   * command leading a session of its own. Its output arrives as STDOUT; STDIN bytes are typed on it.
   */
  pty?: TerminalSize | undefined;
}

/** A terminal's size in character cells. */
export interface TerminalSize {
  /** Columns, 1–65535. */
  cols: number;
  /** Rows, 1–65535. */
  rows: number;
}

/** `u16 cols | u16 rows`: a terminal size (in SPAWN with the PTY flag, and RESIZE). */
export function encodeTerminalSize(size: TerminalSize): Uint8Array {
  const { cols, rows } = size;
  for (const [name, value] of [
    ["cols", cols],
    ["rows", rows],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 0xffff)
      throw invalid(`terminal ${name} must be an integer from 1 to 65535, got ${value}`);
  }
  return new Uint8Array([cols >> 8, cols & 0xff, rows >> 8, rows & 0xff]);
}

/**
 * CONNECT payload: `u16 port` (1–65535), and with `hostSocket` `| path\0 | token`: the agent relays the connection
 * to that unix socket (after the line `PAI-AGENT/1 <token>\n`) instead of carrying it in frames.
 */
export function encodeConnectPayload(port: number, hostSocket?: HostSocket | undefined): Uint8Array {
  if (!Number.isInteger(port) || port < 1 || port > 0xffff) throw invalid(`invalid port ${port}`);
  return withHostSocket(port, hostSocket);
}

/**
 * SPAWN payload: `u8 flags | u32 uid | u32 gid | u16 argc | u16 envc | [u16 cols | u16 rows, with a pty] | cwd\0 |
 * argv[argc]\0 | KEY=VALUE[envc]\0`.
 */
export function encodeSpawnPayload(request: SpawnRequest): Uint8Array {
  const { argv } = request;
  if (argv.length === 0 || argv[0] === "") throw invalid("argv must name a program");
  const env = Object.entries(request.env ?? {}).filter(
    (entry): entry is [string, string] => entry[1] !== undefined,
  );
  if (argv.length > 0xffff || env.length > 0xffff) throw invalid("too many arguments or environment entries");
  const parts: Uint8Array[] = [];
  const head = new Uint8Array(13);
  const view = new DataView(head.buffer);
  let flags = request.stdin ? SPAWN_STDIN : 0;
  if (request.uid !== undefined) flags |= SPAWN_HAS_UID;
  if (request.gid !== undefined) flags |= SPAWN_HAS_GID;
  if (request.inheritEnv ?? true) flags |= SPAWN_INHERIT_ENV;
  if (request.killGroupOnExit) flags |= SPAWN_KILL_GROUP_ON_EXIT;
  if (request.pipe) flags |= SPAWN_PIPE;
  if (request.pty) flags |= SPAWN_PTY;
  head[0] = flags;
  view.setUint32(1, checkId(request.uid, "uid"));
  view.setUint32(5, checkId(request.gid, "gid"));
  view.setUint16(9, argv.length);
  view.setUint16(11, env.length);
  parts.push(head);
  if (request.pty) parts.push(encodeTerminalSize(request.pty));
  parts.push(cString(request.cwd ?? "", "cwd"));
  for (const arg of argv) parts.push(cString(arg, "argument"));
  for (const [key, value] of env) {
    if (key === "" || key.includes("="))
      throw invalid(`invalid environment variable name: ${JSON.stringify(key)}`);
    parts.push(cString(`${key}=${value}`, `environment variable ${key}`));
  }
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  if (total > MAX_FRAME_PAYLOAD_BYTES)
    throw invalid(`command line and environment exceed ${MAX_FRAME_PAYLOAD_BYTES} bytes`);
  return concat(parts, total);
}

/** SIGNAL payload: `u32 signal number`. */
export function encodeSignalPayload(signal: number): Uint8Array {
  if (!Number.isInteger(signal) || signal < 1 || signal > 64)
    throw invalid(`invalid signal number ${signal}`);
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, signal);
  return out;
}

/** The longest unix socket path the agent can connect to (`sun_path` holds 108 bytes with its NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

/** A unix socket of the host, as the container sees it, and the token the agent says there first. */
export interface HostSocket {
  /** Its absolute path inside the container (at most 107 bytes). */
  path: string;
  /** 1–128 printable ASCII bytes without spaces. */
  token: string;
}

/**
 * LISTEN payload: `u16 port` (0: any), and with `hostSocket` `| path\0 | token`: each connection is relayed to
 * that unix socket (after the line `PAI-EGRESS/1 <token>\n`) instead of tunnelled in frames, when the agent can
 * reach it.
 */
export function encodeListenPayload(port: number, hostSocket?: HostSocket | undefined): Uint8Array {
  if (!Number.isInteger(port) || port < 0 || port > 0xffff) throw invalid(`invalid port ${port}`);
  return withHostSocket(port, hostSocket);
}

/** `u16 port`, and with `hostSocket` `| path\0 | token` (LISTEN's and CONNECT's payloads). */
function withHostSocket(port: number, hostSocket: HostSocket | undefined): Uint8Array {
  const head = new Uint8Array([port >> 8, port & 0xff]);
  if (!hostSocket) return head;
  const path = cString(hostSocket.path, "host socket path");
  if (path.length - 1 > MAX_SOCKET_PATH_BYTES || !hostSocket.path.startsWith("/"))
    throw invalid(`invalid host socket path ${JSON.stringify(hostSocket.path)}`);
  if (!/^[\x21-\x7e]{1,128}$/.test(hostSocket.token)) throw invalid("invalid host socket token");
  const token = encoder.encode(hostSocket.token);
  return concat([head, path, token], head.length + path.length + token.length);
}

/** LISTENING payload: `u16 port`. */
export function decodeListeningPayload(payload: Uint8Array): number {
  if (payload.length !== 2) throw protocolError("malformed LISTENING frame");
  return (payload[0]! << 8) | payload[1]!;
}

/** A payload that is exactly one u32 (STREAM_ACK). */
export function encodeU32Payload(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

/**
 * Who a file request acts as (absent: the agent's default user) and the directory it is confined to: the agent
 * resolves `path` inside the container and refuses (EXDEV) one that leaves `root`.
 */
export interface FileRequestScope {
  root: string;
  uid?: number | undefined;
  gid?: number | undefined;
}

function fileHead(flags: number, value: number, scope: FileRequestScope, path: string): Uint8Array[] {
  if (!path.startsWith("/") || !scope.root.startsWith("/")) {
    throw invalid(`root and path must be absolute: ${scope.root}, ${path}`);
  }
  const user = scope;
  const head = new Uint8Array(13);
  const view = new DataView(head.buffer);
  if (user.uid !== undefined) flags |= FILE_HAS_UID;
  if (user.gid !== undefined) flags |= FILE_HAS_GID;
  head[0] = flags;
  view.setUint32(1, value);
  view.setUint32(5, checkId(user.uid, "uid"));
  view.setUint32(9, checkId(user.gid, "gid"));
  return [head, cString(scope.root, "root"), cString(path, "path")];
}

/** The largest file content a WRITE_FILE frame can carry for `path` under `root`. */
export function maxWriteFileBytes(path: string, root: string): number {
  return MAX_FRAME_PAYLOAD_BYTES - 13 - encoder.encode(root).length - 1 - encoder.encode(path).length - 1;
}

/**
 * WRITE_FILE payload: `u8 flags | u32 mode | u32 uid | u32 gid | root\0 | path\0 | content`; with `checkOnly`
 * the agent only checks where the file would go.
 */
export function encodeWriteFilePayload(
  request: FileRequestScope & {
    path: string;
    content: Uint8Array;
    mode?: number | undefined;
    checkOnly?: boolean | undefined;
  },
): Uint8Array {
  const { mode } = request;
  if (mode !== undefined && (!Number.isInteger(mode) || mode < 0 || mode > 0o7777)) {
    throw invalid(`invalid file mode ${mode}`);
  }
  const flags = (mode === undefined ? 0 : FILE_HAS_MODE) | (request.checkOnly ? FILE_CHECK_ONLY : 0);
  const parts = fileHead(flags, mode ?? 0, request, request.path);
  parts.push(request.content);
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  if (total > MAX_FRAME_PAYLOAD_BYTES) {
    throw invalid(
      `file too large for the agent (${request.content.length} bytes, at most ${maxWriteFileBytes(request.path, request.root)}); use the archive API`,
    );
  }
  return concat(parts, total);
}

/** READ_FILE payload: `u8 flags | u32 max bytes | u32 uid | u32 gid | root\0 | path\0`. */
export function encodeReadFilePayload(
  request: FileRequestScope & { path: string; maxBytes: number },
): Uint8Array {
  const { maxBytes } = request;
  if (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > MAX_FRAME_PAYLOAD_BYTES) {
    throw invalid(`maxBytes must be between 1 and ${MAX_FRAME_PAYLOAD_BYTES}`);
  }
  const parts = fileHead(0, maxBytes, request, request.path);
  return concat(
    parts,
    parts.reduce((sum, part) => sum + part.length, 0),
  );
}

/** What the agent says about itself when it starts. */
export interface AgentHello {
  /** Wire protocol version; the client refuses any other than {@link AGENT_PROTOCOL_VERSION}. */
  protocolVersion: number;
  /** Agent build, e.g. `0.1.0+1a2b3c4d5e6f` (the hash of its source). */
  version: string;
  /** The agent's pid in its own pid namespace. */
  pid: number;
  /** The agent's effective uid; 0 means it can run commands as any user. */
  uid: number;
  /** The agent's effective gid. */
  gid: number;
  /** The uid commands and file operations use when a request names none. */
  defaultUid: number;
  /** The gid commands and file operations use when a request names none. */
  defaultGid: number;
}

function view(payload: Uint8Array): DataView {
  return new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
}

/** HELLO payload: `u16 protocol version | u32 pid | u32 uid | u32 gid | u32 default uid | u32 default gid | version`. */
export function decodeHelloPayload(payload: Uint8Array): AgentHello {
  if (payload.length < 22 || payload.length > 22 + 256) throw protocolError("malformed HELLO frame");
  const v = view(payload);
  return {
    protocolVersion: v.getUint16(0),
    pid: v.getUint32(2),
    uid: v.getUint32(6),
    gid: v.getUint32(10),
    defaultUid: v.getUint32(14),
    defaultGid: v.getUint32(18),
    version: decoder.decode(payload.subarray(22)),
  };
}

/** A payload that is exactly one u32 (SPAWNED, STDIN_ACK, PIPE_ACK, STREAM_ACK). */
export function decodeU32Payload(payload: Uint8Array, frame: string): number {
  if (payload.length !== 4) throw protocolError(`malformed ${frame} frame`);
  return view(payload).getUint32(0);
}

/** How a command ended. */
export interface ExitStatus {
  /** Exit code when the command exited, else null. */
  exitCode: number | null;
  /** Signal number (Linux numbering) when a signal killed it, else null. */
  signal: number | null;
}

/** EXIT payload: `u8 kind | u32 value`. */
export function decodeExitPayload(payload: Uint8Array): ExitStatus {
  if (payload.length !== 5) throw protocolError("malformed EXIT frame");
  const value = view(payload).getUint32(1);
  if (payload[0] === 0 && value <= 255) return { exitCode: value, signal: null };
  if (payload[0] === 1 && value >= 1 && value <= 64) return { exitCode: null, signal: value };
  throw protocolError("malformed EXIT frame");
}

/** ERROR payload: `u32 errno | UTF-8 message`. */
export function decodeErrorPayload(payload: Uint8Array): { errno: number; message: string } {
  if (payload.length < 4 || payload.length > 4096) throw protocolError("malformed ERROR frame");
  return { errno: view(payload).getUint32(0), message: decoder.decode(payload.subarray(4)) };
}

/**
 * Linux signal numbers. The agent runs on Linux whatever the host is (macOS numbers differ), so names are
 * mapped here rather than with `os.constants.signals`.
 */
export const LINUX_SIGNALS = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGCHLD: 17,
  SIGCONT: 18,
  SIGSTOP: 19,
  SIGTSTP: 20,
  SIGTTIN: 21,
  SIGTTOU: 22,
  SIGURG: 23,
  SIGXCPU: 24,
  SIGXFSZ: 25,
  SIGVTALRM: 26,
  SIGPROF: 27,
  SIGWINCH: 28,
  SIGIO: 29,
  SIGPWR: 30,
  SIGSYS: 31,
} as const;

/** A signal by Linux name or number. */
export type AgentSignal = keyof typeof LINUX_SIGNALS | number;

/** The Linux number of a signal name or number; throws `INVALID_ARGUMENT` for anything else. */
export function signalNumber(signal: AgentSignal): number {
  const number = typeof signal === "number" ? signal : LINUX_SIGNALS[signal];
  if (!Number.isInteger(number) || number < 1 || number > 64)
    throw invalid(`unknown signal ${String(signal)}`);
  return number;
}

/** The Linux name of a signal number (`SIGKILL` for 9), or `SIG<n>` when it has none here. */
export function signalName(signal: number): string {
  for (const [name, number] of Object.entries(LINUX_SIGNALS)) if (number === signal) return name;
  return `SIG${signal}`;
}

const LINUX_ERRNO: Readonly<Record<number, string>> = {
  1: "EPERM",
  2: "ENOENT",
  5: "EIO",
  7: "E2BIG",
  8: "ENOEXEC",
  11: "EAGAIN",
  12: "ENOMEM",
  13: "EACCES",
  17: "EEXIST",
  18: "EXDEV",
  20: "ENOTDIR",
  21: "EISDIR",
  22: "EINVAL",
  23: "ENFILE",
  24: "EMFILE",
  26: "ETXTBSY",
  27: "EFBIG",
  28: "ENOSPC",
  30: "EROFS",
  36: "ENAMETOOLONG",
  40: "ELOOP",
  71: "EPROTO",
  98: "EADDRINUSE",
  99: "EADDRNOTAVAIL",
  104: "ECONNRESET",
  105: "ENOBUFS",
  110: "ETIMEDOUT",
  111: "ECONNREFUSED",
  122: "EDQUOT",
};

/** The Linux name of an errno number (`ENOENT` for 2), or undefined. */
export function errnoName(errno: number): string | undefined {
  return LINUX_ERRNO[errno];
}
