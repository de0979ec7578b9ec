/**
 * Parsing of the options the Action and the CLI share (twin lists, KEY=VALUE variables), so both
 * accept exactly the same text and say the same thing about a mistake.
 */

/** A mistake in what the user gave us; the message names the input or flag to fix. */
export class InputError extends Error {
  override readonly name = 'InputError';
}

/** Names separated by commas and/or newlines, as YAML block scalars and shell lists make natural. */
export function parseList(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((item) => item.trim())
    .filter(Boolean);
}

/**
 * `KEY=VALUE` a line; blank lines and `#` comments skipped; the value is everything after the first
 * `=`, kept verbatim (so values may contain `=`). A bad line is named by its position only, never
 * quoted: it may hold a secret. `where(n)` says where line n came from, e.g. "Input `env`, line 2".
 */
export function parseEnv(lines: string[], where: (line: number) => string): Record<string, string> {
  const env: Record<string, string> = {};
  lines.forEach((line, index) => {
    if (!line.trim() || line.trim().startsWith('#')) return;
    const eq = line.indexOf('=');
    const key = eq === -1 ? '' : line.slice(0, eq).trim();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      throw new InputError(
        `${where(index + 1)}: expected KEY=VALUE, with KEY of letters, digits and _ not starting with a digit.`,
      );
    }
    if (key in env) throw new InputError(`${where(index + 1)}: ${key} is set twice.`);
    env[key] = line.slice(eq + 1);
  });
  return env;
}

/** A whole number of minutes, as `ttl_minutes` must be (the API checks the range). */
export function parseWholeMinutes(label: string, value: string): number {
  if (!/^\d+$/.test(value))
    throw new InputError(`${label} must be a whole number of minutes, not "${value}".`);
  return Number(value);
}

/** Fractions allowed (`0.5` is 30 s): short timeouts are useful in smoke checks and tests. */
export function parsePositiveMinutes(label: string, value: string): number {
  const number = Number(value);
  if (!value || !Number.isFinite(number) || number <= 0) {
    throw new InputError(`${label} must be a positive number of minutes, not "${value}".`);
  }
  return number;
}
