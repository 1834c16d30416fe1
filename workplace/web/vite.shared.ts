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
    },
    server: { strictPort: true },
  } as UserConfig;
}
