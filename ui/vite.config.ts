import { defineConfig } from "vite";

// Served by the local server at /app/; every asset under /app/assets with a content hash.
export default defineConfig({
  base: "/app/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The page's Content-Security-Policy allows its own files only: no inline script or style.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
});
