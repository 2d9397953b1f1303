// The payload viewer: a static page that shows a dropped file or pasted hex as amber inspect,
// amber stats and amber to-json would. Everything runs in the page; nothing is sent anywhere.

import { trace, inspectLines, stats, statsLines, toJson, decode, envelopeInfo, readStream, DecodeError } from "../src/index.js";

const MAX_LINES = 5000;
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function parseHex(text: string): Uint8Array {
  const clean = text.replace(/0x/gi, "").replace(/[\s,:]+/g, "");
  if (!/^[0-9a-fA-F]*$/.test(clean) || clean.length % 2) throw new Error("that is not hex: pairs of 0-9 a-f, spaces allowed");
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function setStatus(text: string, good: boolean): void {
  const s = $("status");
  s.textContent = text;
  s.className = good ? "good" : "bad";
}

function showPayload(data: Uint8Array): { ok: boolean; lines: string[]; stats: string[]; json: string } {
  const result = trace(data);
  const lines = inspectLines(data, result, { maxLines: MAX_LINES });
  if (result.error !== null) return { ok: false, lines, stats: [], json: "" };
  const size = result.body !== null ? result.body.length + 3 : data.length;
  return { ok: true, lines, stats: statsLines(stats(size, result.events)), json: toJson(decode(data, { placeholders: true })) };
}

function show(data: Uint8Array): void {
  const envelope = $("envelope-section");
  envelope.hidden = true;
  if (data.length >= 2 && data[0] === 0xab && data[1] === 0x53) {
    try {
      const messages = readStream(data, { decodePayloads: false });
      const parts = messages.map((m) => {
        const r = showPayload(m.payload);
        return { m, r };
      });
      $("inspect").textContent = parts.map(({ m, r }) => `message ${m.index} at stream offset ${m.offset}\n${r.lines.join("\n")}`).join("\n\n");
      $("stats").textContent = parts.map(({ m, r }) => `message ${m.index}\n${r.stats.join("\n")}`).join("\n\n");
      $("json").textContent = parts.map(({ r }) => r.json).join("\n");
      const bad = parts.filter(({ r }) => !r.ok).length;
      setStatus(`stream of ${messages.length} messages${bad ? `, ${bad} not valid` : ""}`, bad === 0);
    } catch (e) {
      $("inspect").textContent = `error: ${(e as Error).message}`;
      $("stats").textContent = "";
      $("json").textContent = "";
      setStatus(e instanceof DecodeError ? `stream error: ${e.kind} at ${e.offset}` : "not a stream", false);
    }
    return;
  }
  if (data.length >= 3 && data[2] & 0x30) {
    try {
      const info = envelopeInfo(data);
      envelope.hidden = false;
      const id = info.keyId ? Array.from(info.keyId, (b) => b.toString(16).padStart(2, "0")).join("") : "none";
      $("envelope").textContent = `signed: ${info.signed} (key id ${id}${info.timestamp !== null ? `, timestamp ${info.timestamp}` : ""}; not verified: the page holds no key)\ncompression: ${info.compression ?? "none"}${info.compressedSize !== null ? ` (${info.compressedSize} bytes, ${info.size} decompressed)` : ""}`;
    } catch {
      // the listing below reports the envelope's error
    }
  }
  const r = showPayload(data);
  $("inspect").textContent = r.lines.join("\n");
  $("stats").textContent = r.stats.join("\n");
  $("json").textContent = r.json;
  setStatus(r.ok ? `valid payload, ${data.length} bytes` : "not a valid payload: see the last line", r.ok);
}

function showHex(): void {
  try {
    show(parseHex(($("hex") as HTMLTextAreaElement).value));
  } catch (e) {
    setStatus((e as Error).message, false);
  }
}

async function showFile(file: File): Promise<void> {
  const data = new Uint8Array(await file.arrayBuffer());
  ($("hex") as HTMLTextAreaElement).value = Array.from(data.subarray(0, 4096), (b) => b.toString(16).padStart(2, "0")).join(" ") + (data.length > 4096 ? " ..." : "");
  show(data);
}

$("show").addEventListener("click", showHex);
$("file").addEventListener("change", () => {
  const f = ($("file") as HTMLInputElement).files?.[0];
  if (f) void showFile(f);
});
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  const f = e.dataTransfer?.files?.[0];
  if (f) void showFile(f);
});
