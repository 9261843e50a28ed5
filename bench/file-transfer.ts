import { Readable } from "node:stream";
import { dockerSandbox } from "@pai/sandbox";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { summarize, time } from "./stats.ts";

const MIB = 1024 * 1024;

/** A ustar header for one regular file. */
function ustarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  const put = (value: string, offset: number) => header.write(value, offset, "latin1");
  put(name, 0);
  put("0000644\0", 100);
  put("0001750\0", 108);
  put("0001750\0", 116);
  put(`${size.toString(8).padStart(11, "0")}\0`, 124);
  put(
    `${Math.floor(Date.now() / 1000)
      .toString(8)
      .padStart(11, "0")}\0`,
    136,
  );
  put("        ", 148);
  put("0", 156);
  put("ustar\x0000", 257);
  let sum = 0;
  for (const byte of header) sum += byte;
  put(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  return header;
}

/** A tar stream holding one `bytes`-long file (`bytes` a multiple of 512), made on the fly. */
function tarOfOneFile(bytes: number): Readable {
  const chunk = Buffer.alloc(MIB, 7);
  return Readable.from(
    (function* () {
      yield ustarHeader("big.bin", bytes);
      for (let left = bytes; left > 0; left -= MIB) yield left >= MIB ? chunk : chunk.subarray(0, left);
      yield Buffer.alloc(1024);
    })(),
  );
}

async function drain(stream: Readable): Promise<number> {
  let bytes = 0;
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  return bytes;
}

/** 100 MiB up and down (uploadDirectory / downloadDirectory) and 1,000 small files (writeFiles / listFiles). */
export async function benchFileTransfer(options: { rounds: number; megabytes: number }): Promise<BenchRow[]> {
  const bytes = options.megabytes * MIB;
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("files"),
    pool: { min: 1, max: 1 },
    limits: { fsizeBytes: 2 * bytes },
  });
  const up: number[] = [];
  const down: number[] = [];
  const small: number[] = [];
  try {
    const { facade, release } = await binding.provision({
      leaseKey: "bench:files",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    try {
      const files = Array.from({ length: 1000 }, (_, i) => ({
        path: `small/${Math.floor(i / 100)}/f${i}.txt`,
        content: `file ${i}\n`.repeat(8),
      }));
      for (let round = 0; round < options.rounds + 1; round++) {
        const u = await time(() => facade.uploadDirectory(tarOfOneFile(bytes), `up${round}`));
        let got = 0;
        const d = await time(async () => {
          got = await drain(await facade.downloadDirectory(`up${round}`));
        });
        if (got < bytes) throw new Error(`downloaded ${got} bytes, expected ≥ ${bytes}`);
        const s = await time(() => facade.writeFiles(files));
        await facade.removeFile(`up${round}`, { recursive: true });
        await facade.removeFile("small", { recursive: true });
        if (round === 0) continue; // warm-up
        up.push(u);
        down.push(d);
        small.push(s);
      }
    } finally {
      await release();
    }
  } finally {
    await binding.close();
  }
  const rate = (ms: number) => options.megabytes / (ms / 1000);
  const upload = summarize(up);
  const download = summarize(down);
  return [
    {
      name: `upload ${options.megabytes} MiB (uploadDirectory)`,
      subject: upload,
      value: rate(upload.p50),
      unit: "MiB/s",
      target: "≥ 250 MiB/s",
      met: rate(upload.p50) >= 250,
    },
    {
      name: `download ${options.megabytes} MiB (downloadDirectory)`,
      subject: download,
      value: rate(download.p50),
      unit: "MiB/s",
    },
    { name: "write 1,000 small files (writeFiles)", subject: summarize(small) },
  ];
}
