import type { ContainerSpec } from "@pai/pool";

/**
 * The user every program in a sandbox or browser container runs as: the agent's default for commands and file
 * operations (when it runs as root), and the user of the `docker exec` sessions that run programs without it.
 */
export const SANDBOX_USER = "1000:1000";

/**
 * How a container whose programs go through the agent runs: its main process (the agent, or what idles while the
 * agent is started with `docker exec`) as root, keeping only the capabilities the agent needs to start each program
 * as {@link SANDBOX_USER} (`SETUID`, `SETGID`), to empty that program's bounding set (`SETPCAP`) and to signal
 * its process group (`KILL`). A program then holds no capability and cannot signal the agent, its parent or the
 * container's init, so `kill -9 -1`, `pkill pai-agent` or killing the main process from inside leaves the container
 * serving. Spread it into a `ContainerSpec`.
 */
export const agentSupervisorSpec = {
  user: "0:0",
  capabilities: ["SETUID", "SETGID", "SETPCAP", "KILL"],
} as const satisfies Pick<ContainerSpec, "user" | "capabilities">;
