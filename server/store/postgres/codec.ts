/**
 * Records as jsonb, losslessly. jsonb cannot hold U+0000 nor a lone UTF-16 surrogate, both of which a
 * JavaScript string (and so a request body: an env value, a seed) may carry and the embedded store
 * keeps. Such characters are escaped with U+E000 (a private-use character), which is itself doubled:
 *
 *   U+0000          -> U+E000 "0"
 *   lone surrogate  -> U+E000 "u" and its four hex digits
 *   U+E000          -> U+E000 U+E000
 *
 * The mapping is one-to-one, so unique indexes and lookups on escaped values still mean the same. A
 * record without any of them (nearly all) is stored as JSON.stringify wrote it.
 */
const ESC = '\uE000';
const NEEDS_ESCAPE = /[\u0000\uE000]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** What JSON.stringify writes for those characters: `\u0000`, `\udxxx`, or U+E000 itself. */
const JSON_NEEDS_ESCAPE = /\\u0000|\\ud[89a-f]|\uE000/i;

export function escapeString(text: string): string {
  if (!NEEDS_ESCAPE.test(text)) return text;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit === 0) out += `${ESC}0`;
    else if (unit === 0xe000) out += ESC + ESC;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += text[i]! + text[i + 1]!;
        i++;
      } else out += `${ESC}u${unit.toString(16)}`;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) out += `${ESC}u${unit.toString(16)}`;
    else out += text[i]!;
  }
  return out;
}

export function unescapeString(text: string): string {
  if (!text.includes(ESC)) return text;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== ESC) {
      out += text[i]!;
      continue;
    }
    const kind = text[i + 1];
    if (kind === '0') {
      out += '\u0000';
      i += 1;
    } else if (kind === 'u') {
      out += String.fromCharCode(Number.parseInt(text.slice(i + 2, i + 6), 16));
      i += 5;
    } else {
      out += ESC;
      i += 1;
    }
  }
  return out;
}

function mapStrings(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[map(key)] = mapStrings(item, map);
    return out;
  }
  return value;
}

/** The JSON text to store for `value`. */
export function encodeJson(value: unknown): string {
  const json = JSON.stringify(value);
  // Mapped over the JSON, not `value`, so that toJSON, undefined members and the like mean what they do.
  return JSON_NEEDS_ESCAPE.test(json) ? JSON.stringify(mapStrings(JSON.parse(json), escapeString)) : json;
}

/** Parses jsonb text as PostgreSQL returns it (the pool's parser for jsonb). */
export function decodeJson(text: string): unknown {
  const value = JSON.parse(text) as unknown;
  return text.includes(ESC) ? mapStrings(value, unescapeString) : value;
}
