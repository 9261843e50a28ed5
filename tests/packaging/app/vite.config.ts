import { defineConfig } from "vite";

export default defineConfig({ root: "page", build: { outDir: "../dist-page", emptyOutDir: true } });
