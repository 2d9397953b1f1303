// The payload viewer in a real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): it loads payloads made by the Python implementation, pasted as hex and
// opened as a file, and must show exactly what the Python CLI prints for them (amber inspect,
// amber stats, amber to-json). A screenshot is kept in js/test-artifacts/. And the encoder
// writing zstd envelopes in the browser, through the WASM compressor.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { dirname, join } from "node:path";
import { chromium } from "playwright-core";
import { build } from "esbuild";
import { decode } from "../src/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const jsRoot = join(here, "..", "..");
const repo = join(jsRoot, "..");
const python = join(repo, ".venv", "bin", "python");
const artifacts = join(jsRoot, "test-artifacts");
const CHROMIUM = process.env.AMBER_CHROMIUM ?? "/usr/bin/chromium";

// A payload with most kinds, sharing, a cycle, rows, object rows with a float column, packed
// numbers, EXT values, classes of every creation, an exception, a namespace and the singletons.
const MAKE_PAYLOAD = `
import amber, datetime, decimal, uuid, collections, sys, types
from fractions import Fraction
class Items(list): pass
class Tag(str): pass
class Box:
    def __reduce__(self): return (Box, (), {"me": self})
class Pt:
    def __init__(self, x, y): self.x, self.y = x, y
err = ValueError("bad", 3)
err.__cause__ = KeyError("k")
ns = types.SimpleNamespace(host="db", port=5432)
s = "hello world"
shared = [1, 2]
loop = []
loop.append(loop)
value = {
    "name": "Ada", "é": "ü€\\n", "n": [-1, 64, 2**70, 0.1, 1.0, -0.0, float("inf"), 1e-7, 1+2j],
    "s": [s, s], "shared": [shared, shared], "loop": loop,
    "rows": [(i, str(i)) for i in range(5)],
    "points": [Pt(i / 3 + 0.01, str(i)) for i in range(3)],
    "packed": [float(i) / 3 for i in range(6)],
    "bytes": [b"", b"\\x00'ab", bytearray(b"xy")],
    "sets": [{3, 1, 2}, frozenset({"a"})], "tuple": (1, (2, 3)),
    "when": [datetime.date(2024, 5, 17), datetime.datetime(2024, 5, 17, 13, 45, 30, 250000, tzinfo=datetime.timezone.utc)],
    "money": decimal.Decimal("-12.50"), "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "misc": [collections.deque([1], maxlen=3), Fraction(1, 3), range(0, 10, 2), collections.OrderedDict(a=1)],
    "long": "x" * 60, 7: None, (1, 2): True,
    "new": [ns, ..., NotImplemented, err, int, Items([1]), Tag("t"), Box()],
}
sys.stdout.write(amber.dumps(value).hex())
`;

function cli(args: string[]): string {
  return execFileSync(python, ["-m", "amber", ...args], { encoding: "utf8", cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
}

test("viewer: shows what amber inspect, stats and to-json show, in Chromium", async () => {
  assert.ok(existsSync(python), `no ${python}: run make build`);
  assert.ok(existsSync(CHROMIUM), `no ${CHROMIUM}: make js-test installs Debian's chromium`);
  assert.ok(existsSync(join(jsRoot, "viewer", "viewer.js")), "viewer/viewer.js is not built (npm run build)");
  const hex = execFileSync(python, ["-c", MAKE_PAYLOAD], { encoding: "utf8", cwd: repo });
  const payload = Buffer.from(hex, "hex");
  mkdirSync(artifacts, { recursive: true });
  const file = join(artifacts, "sample.amber");
  writeFileSync(file, payload);
  const want = {
    inspect: cli(["inspect", file]).trimEnd(),
    stats: cli(["stats", file]).trimEnd(),
    json: cli(["to-json", file]).trimEnd(),
  };
  // Errors too: a cut payload shows the values before the failure and its kind and offset.
  const cut = payload.subarray(0, 60);
  const cutFile = join(artifacts, "cut.amber");
  writeFileSync(cutFile, cut);
  let cutListing = "";
  try {
    cli(["inspect", cutFile]);
  } catch (e) {
    cutListing = String((e as { stdout?: string }).stdout ?? "");
  }
  assert.match(cutListing, /error: .*\(at byte \d+, \w+\)/);

  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(pathToFileURL(join(jsRoot, "viewer", "index.html")).href);
    const read = async () => ({
      inspect: (await page.locator("#inspect").textContent())!.trimEnd(),
      stats: (await page.locator("#stats").textContent())!.trimEnd(),
      json: (await page.locator("#json").textContent())!.trimEnd(),
      status: (await page.locator("#status").textContent())!,
    });

    // Pasted hex, with spaces as people paste it.
    await page.locator("#hex").fill(hex.replace(/(..)/g, "$1 "));
    await page.locator("#show").click();
    const pasted = await read();
    assert.equal(pasted.inspect, want.inspect);
    assert.equal(pasted.stats, want.stats);
    assert.equal(pasted.json, want.json);
    assert.match(pasted.status, /^valid payload/);
    await page.screenshot({ path: join(artifacts, "viewer.png"), fullPage: true });

    // The same file opened through the file input.
    await page.locator("#hex").fill("");
    await page.locator("#file").setInputFiles(file);
    await page.waitForFunction(() => document.querySelector("#hex") && (document.querySelector("#hex") as HTMLTextAreaElement).value.length > 0);
    assert.equal((await read()).inspect, want.inspect);

    // A cut payload: every line before the error as the CLI has it, and the same kind and offset.
    await page.locator("#hex").fill(cut.toString("hex"));
    await page.locator("#show").click();
    const broken = await read();
    const lines = broken.inspect.split("\n");
    const wantLines = cutListing.trimEnd().split("\n");
    assert.deepEqual(lines.slice(0, -1), wantLines.slice(0, -1));
    assert.equal(/\(at byte \d+, \w+\)$/.exec(lines.at(-1)!)?.[0], /\(at byte \d+, \w+\)$/.exec(wantLines.at(-1)!)?.[0]);
    assert.match(broken.status, /not a valid payload/);
    await page.screenshot({ path: join(artifacts, "viewer-error.png"), fullPage: true });
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});

// The page's script: zstd envelopes written in the browser (WebCrypto, the WASM compressor).
const ZSTD_PAGE = `
import { encode, encodeAsync, decode, decodeAsync, initZstd, zstdCompressor } from "./src/index.ts";
(async () => {
  const before = zstdCompressor();
  const value = { text: "abc".repeat(10000), rows: Array.from({ length: 500 }, (_, i) => [i, "row " + (i % 9)]) };
  const key = { secret: "a browser secret of enough bytes" };
  const signed = await encodeAsync(value, { compress: "zstd", key, timestamp: 1700000000 });
  const opened = await decodeAsync(signed, { keys: [key], dicts: "object" });
  await initZstd();
  const plain = encode(value, { compress: "zstd", level: 19 });
  const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  globalThis.RESULT = {
    before, after: zstdCompressor(), signed: hex(signed), plain: hex(plain),
    same: JSON.stringify(opened) === JSON.stringify(value) && JSON.stringify(decode(plain, { dicts: "object" })) === JSON.stringify(value),
  };
})().catch((e) => (globalThis.RESULT = { error: String(e && e.stack || e) }));
`;

test("browser: zstd envelopes are written in Chromium (WASM), and the viewer does not carry the compressor", async () => {
  assert.ok(existsSync(CHROMIUM), `no ${CHROMIUM}: make js-test installs Debian's chromium`);
  // The viewer only decodes: the compressor (about 240 KB) stays out of its bundle.
  const viewer = readFileSync(join(jsRoot, "viewer", "viewer.js"), "utf8");
  assert.ok(!viewer.includes("CStreamOutSize"), "the zstd compressor is in viewer.js");
  assert.ok(viewer.length < 200_000, `viewer.js has ${viewer.length} bytes`);
  const dir = join(artifacts, "zstd-page");
  mkdirSync(dir, { recursive: true });
  await build({
    stdin: { contents: ZSTD_PAGE, resolveDir: jsRoot, loader: "js" },
    outfile: join(dir, "page.js"), bundle: true, format: "iife", platform: "browser", target: "es2022", logLevel: "warning",
  });
  writeFileSync(join(dir, "index.html"), '<!doctype html><meta charset="utf-8"><script src="page.js"></script>\n');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(pathToFileURL(join(dir, "index.html")).href);
    await page.waitForFunction(() => (globalThis as { RESULT?: unknown }).RESULT !== undefined, null, { timeout: 30_000 });
    const result = await page.evaluate(() => (globalThis as unknown as { RESULT: Record<string, unknown> }).RESULT);
    assert.equal(result.error, undefined);
    assert.deepEqual([result.before, result.after, result.same], [null, "wasm", true]);
    // What the browser wrote opens here too.
    const key = { secret: "a browser secret of enough bytes" };
    const signed = Buffer.from(result.signed as string, "hex");
    assert.equal(signed[2], 0x31);
    const value = decode(signed, { keys: [key], dicts: "object" }) as { text: string };
    assert.equal(value.text, "abc".repeat(10000));
    const plain = Buffer.from(result.plain as string, "hex");
    assert.equal(plain[2], 0x11);
    assert.equal(plain[3], 1, "zstd");
    assert.deepEqual(decode(plain, { dicts: "object" }), value);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});
