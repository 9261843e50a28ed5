/**
 * SSH settings of an engine reached over SSH (`protocol: "ssh"`): the connection runs `docker system dial-stdio`
 * on the remote host, so its `docker` CLI must reach the engine there. A subset of the SSH client's options.
 */
export interface DockerSshOptions {
  /** A private key (PEM/OpenSSH text). */
  privateKey?: string | Buffer;
  /** The private key's passphrase. */
  passphrase?: string;
  /** Path of an SSH agent's socket (e.g. `process.env.SSH_AUTH_SOCK`). */
  agent?: string;
  /**
   * Checks the host's key (raw, as a Buffer); return `false` to refuse it. Without it any host key is accepted:
   * set it for engines across a network you do not control.
   */
  hostVerifier?: (key: Buffer) => boolean;
  /** How long the SSH handshake may take, in milliseconds. @default 20000 */
  readyTimeout?: number;
}

/**
 * How to reach one Docker engine: a unix socket, TCP (with TLS), or SSH. The field names are dockerode's, so
 * options written for dockerode (or read from `DOCKER_HOST`/`DOCKER_CERT_PATH`) carry over; no dockerode type
 * leaks into PAI's API.
 *
 * @example
 * const local: DockerEngineConnection = { socketPath: "/var/run/docker.sock" };
 * const tls: DockerEngineConnection = { host: "10.0.0.5", port: 2376, protocol: "https", ca, cert, key };
 * const ssh: DockerEngineConnection = { host: "runner-2", protocol: "ssh", username: "pai", sshOptions: { agent } };
 */
export interface DockerEngineConnection {
  /** Unix socket of the engine, e.g. `/var/run/docker.sock`. */
  socketPath?: string;
  /** TCP or SSH host of the engine (then `port` and `protocol` apply). */
  host?: string;
  /** @default 2376 for `https`, 2375 for `http`, 22 for `ssh` */
  port?: number | string;
  /** @default "https" when `ca`, `cert` and `key` are all given, else "http" */
  protocol?: "http" | "https" | "ssh";
  /** TLS: the certificate authority (or authorities) that signed the engine's certificate. */
  ca?: string | Buffer | ReadonlyArray<string | Buffer>;
  /** TLS: the client certificate the engine verifies (`dockerd --tlsverify`). */
  cert?: string | Buffer;
  /** TLS: the client certificate's private key. */
  key?: string | Buffer;
  /** SSH: the user to log in as. */
  username?: string;
  /** SSH: keys, agent and host key check. */
  sshOptions?: DockerSshOptions;
  /** Pins the Engine API version (e.g. `v1.41`); by default the engine's own is used. */
  version?: string;
}

/** The engine of `DOCKER_HOST` (or the default socket) when no connection option is set. */
function environmentEngineId(): string {
  const host = process.env.DOCKER_HOST;
  return host !== undefined && host !== "" ? host : "unix:///var/run/docker.sock";
}

/** The protocol and port a TCP or SSH connection uses once defaults apply. */
function remoteEndpoint(connection: DockerEngineConnection): { protocol: string; port: number | string } {
  const protocol =
    connection.protocol ?? (connection.ca && connection.cert && connection.key ? "https" : "http");
  const port = connection.port ?? (protocol === "ssh" ? 22 : protocol === "https" ? 2376 : 2375);
  return { protocol, port };
}

const hasValue = (value: string | undefined): value is string => value !== undefined && value !== "";

/**
 * The engine an `ssh://[user@]host[:port]` `DOCKER_HOST` names, logged in with the agent of `SSH_AUTH_SOCK` (as the
 * `docker` CLI does, without its `~/.ssh/config`); `undefined` for any other `DOCKER_HOST`, which dockerode reads.
 * @throws TypeError for an `ssh://` URL that does not parse or names no host.
 */
function environmentSshConnection(): DockerEngineConnection | undefined {
  const host = process.env.DOCKER_HOST;
  if (host === undefined || !host.startsWith("ssh://")) return undefined;
  let url: URL;
  try {
    url = new URL(host);
  } catch {
    throw new TypeError(`DOCKER_HOST ${host} is not an ssh://[user@]host[:port] URL`);
  }
  if (url.hostname === "") throw new TypeError(`DOCKER_HOST ${host} names no host`);
  const agent = process.env.SSH_AUTH_SOCK;
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    protocol: "ssh",
    ...(url.port !== "" ? { port: Number(url.port) } : {}),
    ...(url.username !== "" ? { username: decodeURIComponent(url.username) } : {}),
    ...(hasValue(agent) ? { sshOptions: { agent } } : {}),
  };
}

/**
 * A name for the engine a connection reaches, stable across restarts and free of secrets: `unix://<path>`,
 * `tcp://<host>:<port>` (TLS or not) or `ssh://<user>@<host>:<port>`. With no connection option set, the
 * engine `DOCKER_HOST` names (or `unix:///var/run/docker.sock`).
 */
export function dockerEngineId(connection: DockerEngineConnection = {}): string {
  if (hasValue(connection.host)) {
    const { protocol, port } = remoteEndpoint(connection);
    if (protocol !== "ssh") return `tcp://${connection.host}:${port}`;
    const user = connection.username ? `${connection.username}@` : "";
    return `ssh://${user}${connection.host}:${port}`;
  }
  if (hasValue(connection.socketPath)) return `unix://${connection.socketPath}`;
  return environmentEngineId();
}

/** Whether `connection` (or, with no socket or host given, `DOCKER_HOST`) reaches its engine over SSH. */
export function reachesEngineOverSsh(connection: DockerEngineConnection = {}): boolean {
  return toDockerodeConnection(connection).protocol === "ssh";
}

const connectionFields = [
  "socketPath",
  "host",
  "port",
  "protocol",
  "ca",
  "cert",
  "key",
  "username",
  "sshOptions",
  "version",
] as const;

/**
 * dockerode's connection options for `connection`. An explicit socket or host overrides all of `DOCKER_HOST`
 * (dockerode would otherwise keep the environment's host over a given socket); with neither, the environment
 * decides (an `ssh://` one as if given here, see `protocol: "ssh"`). An SSH engine comes out with
 * `protocol: "ssh"`, which the driver reaches through its own transport (`createDockerSshAgent`).
 */
export function toDockerodeConnection(given: DockerEngineConnection): Record<string, unknown> {
  const explicit = hasValue(given.host) || hasValue(given.socketPath);
  const connection = explicit ? given : { ...given, ...environmentSshConnection() };
  const options: Record<string, unknown> = {};
  if (hasValue(connection.host) || hasValue(connection.socketPath)) {
    for (const name of connectionFields) options[name] = undefined;
  }
  for (const name of connectionFields) {
    if (connection[name] !== undefined) options[name] = connection[name];
  }
  if (hasValue(connection.host)) Object.assign(options, remoteEndpoint(connection));
  return options;
}
