import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseProxyRequest } from "./parse-proxy-request.ts";

// Property runs: a quick number in `npm test`, many in `npm run fuzz` (PAI_FUZZ_RUNS).
fc.configureGlobal({ numRuns: Number(process.env.PAI_FUZZ_RUNS) || 300 });

/** Heads made of the pieces a request head has, and of the bytes that break one. */
const headArbitrary = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        "CONNECT",
        "GET",
        "POST",
        " ",
        "http://",
        "https://",
        "example.com",
        "[::1]",
        ":",
        "80",
        "65536",
        "/",
        "?q=1",
        "#f",
        "%",
        " HTTP/1.1",
        " HTTP/1.0",
        "\r\n",
        "\n",
        "\r",
        "\0",
        "Host: h",
        "Connection: keep-alive",
        "Proxy-Authorization: x",
        "Upgrade: websocket",
        "\xe9",
        "\xff",
      ),
      fc.string({ maxLength: 6 }),
    ),
    { maxLength: 24 },
  )
  .map((pieces) => pieces.join(""));

const hostArbitrary = fc.oneof(
  fc.domain(),
  fc.ipV4(),
  fc.ipV6().map((address) => `[${address}]`),
);

describe("parseProxyRequest (properties)", () => {
  it("never throws, and a plain request's upstream head has one request line and ends at its only blank line", () => {
    fc.assert(
      fc.property(headArbitrary, (head) => {
        const parsed = parseProxyRequest(head);
        if ("error" in parsed) {
          expect(typeof parsed.error).toBe("string");
          return;
        }
        expect(parsed.method).toMatch(/^[A-Z]+$/);
        expect(Number.isInteger(parsed.target.port)).toBe(true);
        if (parsed.upstreamHead === undefined) return expect(parsed.method).toBe("CONNECT");
        const upstream = parsed.upstreamHead;
        expect(upstream.indexOf("\r\n\r\n")).toBe(upstream.length - 4);
        const lines = upstream.slice(0, -4).split("\r\n");
        expect(lines[0]).toMatch(/^[A-Z]+ \/\S* HTTP\/1\.[01]$/);
        const names = lines.slice(1).map((line) => line.slice(0, line.indexOf(":")).trim().toLowerCase());
        expect(names.filter((name) => name === "connection")).toHaveLength(1);
        expect(lines.at(-1)).toBe("Connection: close");
        for (const dropped of ["proxy-connection", "proxy-authorization", "keep-alive", "te", "upgrade"])
          expect(names).not.toContain(dropped);
      }),
    );
  });

  it("reads back the target of a CONNECT and of an absolute http:// request", () => {
    fc.assert(
      fc.property(hostArbitrary, fc.integer({ min: 1, max: 65535 }), fc.boolean(), (host, port, tunnel) => {
        const bare = host.startsWith("[") ? host.slice(1, -1) : host;
        const head = tunnel
          ? `CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}`
          : `GET http://${host}:${port}/a?b=c HTTP/1.1\r\nAccept: */*`;
        const parsed = parseProxyRequest(head);
        if ("error" in parsed) throw new Error(parsed.error);
        expect(parsed.method).toBe(tunnel ? "CONNECT" : "GET");
        // URL normalises hosts (case, IPv6 zeros) and drops a scheme's default port; CONNECT keeps them as given.
        if (tunnel) expect(parsed.target).toEqual({ host: bare, port });
        else {
          expect(parsed.target.port).toBe(port);
          expect(new URL(`http://${host}/`).hostname.replace(/^\[|\]$/g, "")).toBe(parsed.target.host);
          expect(parsed.upstreamHead).toMatch(/^GET \/a\?b=c HTTP\/1\.1\r\nHost: .*\r\nAccept: \*\/\*\r\n/);
        }
      }),
    );
  });
});
