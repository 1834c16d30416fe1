import type { Theme } from "./types";

/** applyTheme follows the Principal's preference; System follows the browser. */
export function applyTheme(theme: Theme | undefined) {
  const root = document.documentElement;
  if (theme === "Light" || theme === "Dark") root.dataset.theme = theme.toLowerCase();
  else delete root.dataset.theme;
}
