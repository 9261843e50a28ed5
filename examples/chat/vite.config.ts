import { fileURLToPath } from "node:url";
import { defaultClientConditions, defineConfig } from "vite";

/** Builds the chat page: `page/` → `dist/` (served by `server.ts`). */
export default defineConfig({
  root: fileURLToPath(new URL("./page", import.meta.url)),
  base: "/",
  // In the repo the page bundles the packages' sources (their `@pai/source` export condition); an app installing
  // @pai/react from a registry bundles its built dist/ with the default conditions.
  resolve: { conditions: ["@pai/source", ...defaultClientConditions] },
  build: {
    outDir: fileURLToPath(new URL("./dist", import.meta.url)),
    emptyOutDir: true,
    sourcemap: true,
    // the markdown renderer (streamdown with its unified/parse5 pipeline) is one lazy chunk of ~530 kB
    chunkSizeWarningLimit: 600,
    rolldownOptions: {
      onwarn(warning, warn) {
        // swr (under @ai-sdk/react) marks its modules "use client"; that means nothing in a client bundle
        if (warning.code === "MODULE_LEVEL_DIRECTIVE") return;
        warn(warning);
      },
    },
  },
  server: {
    host: "127.0.0.1",
    // ws: the Terminal panel's WebSocket (`/api/threads/:id/terminal`)
    proxy: { "/api": { target: "http://127.0.0.1:3000", ws: true } },
  },
});
