// Bundles the viewer into one classic script, so that viewer/index.html works from file://
// (browsers refuse ES modules there) with no server.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
await build({
  entryPoints: [join(root, "viewer", "main.ts")],
  outfile: join(root, "viewer", "viewer.js"),
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
