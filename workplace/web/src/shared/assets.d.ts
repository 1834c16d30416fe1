// Files the apps import for their URL (Vite turns them into an asset or a data: URL).
declare module "*.svg" {
  const url: string;
  export default url;
}
