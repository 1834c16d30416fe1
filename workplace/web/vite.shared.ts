import type { UserConfig } from "vite";

// One build per app: each is a single page served for all of its routes, with assets named after
// their content so that the committed output changes only when the sources do.
export function appConfig(app: "workplace" | "console", base: string): UserConfig {
  return {
    root: `src/${app}`,
    base,
    publicDir: false,
    oxc: { jsx: { runtime: "automatic" } },
    build: {
      outDir: `../../dist/${app}`,
      emptyOutDir: true,
      sourcemap: false,
      chunkSizeWarningLimit: 1024,
      // Never inline an asset: an asset both the page and the code refer to (the favicon) was
      // inlined or emitted depending on which build step reached it first, so the committed
      // output changed between two builds of the same sources.
      assetsInlineLimit: 0,
    },
    server: { strictPort: true },
  } as UserConfig;
}
