// Prints latencies of the browser capability as JSON: warm provision (pool acquire of a connected Chromium),
// goto+text against a page served on 127.0.0.1, click, screenshot, and a cold start (container to connected).
// Usage: node capabilities/browser/scripts/measure-browser.ts [image] [rounds]
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dockerBrowser } from "../src/index.ts";

const image = process.argv[2] ?? "pai/browser:latest";
const rounds = Number(process.argv[3] ?? 10);

function summary(samples: number[]): { p50: number; p95: number; min: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    Number((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(1));
  return { p50: at(0.5), p95: at(0.95), min: at(0), max: at(1) };
}

const server = createServer((_request, response) => {
  response
    .writeHead(200, { "content-type": "text/html" })
    .end('<title>m</title><button id="b" onclick="this.textContent=\'clicked\'">go</button><p>hello</p>');
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const binding = dockerBrowser({
  image,
  poolId: `measure-browser-${randomBytes(3).toString("hex")}`,
  pool: { min: 1, max: 3 },
});
const coldStarted = performance.now();
await binding.start();
const coldStartMs = performance.now() - coldStarted;
const provision: number[] = [];
const firstGotoText: number[] = [];
const gotoText: number[] = [];
const click: number[] = [];
const screenshot: number[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    while ((binding.metrics()?.available ?? 0) < 1) await new Promise((resolve) => setTimeout(resolve, 20));
    let started = performance.now();
    const resource = await binding.provision({
      leaseKey: `user:m${round}`,
      lifetime: "user",
      signal: new AbortController().signal,
    });
    provision.push(performance.now() - started);
    const page = resource.facade;
    try {
      for (let i = 0; i < 5; i++) {
        started = performance.now();
        await page.goto(`${origin}/?i=${i}`);
        await page.text();
        (i === 0 ? firstGotoText : gotoText).push(performance.now() - started);
      }
      started = performance.now();
      await page.click("#b");
      click.push(performance.now() - started);
      started = performance.now();
      await page.screenshot();
      screenshot.push(performance.now() - started);
    } finally {
      await resource.release();
    }
  }
} finally {
  await binding.close();
  server.close();
}
console.log(
  JSON.stringify(
    {
      image,
      rounds,
      coldStartMs: Number(coldStartMs.toFixed(1)),
      warmProvisionMs: summary(provision),
      firstGotoPlusTextMs: summary(firstGotoText),
      gotoPlusTextMs: summary(gotoText),
      clickMs: summary(click),
      screenshotMs: summary(screenshot),
    },
    null,
    2,
  ),
);
