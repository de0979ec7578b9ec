import { readFileSync } from 'node:fs';

/**
 * Mount points in this mount namespace, in mount order, as /proc/self/mountinfo lists them (it escapes
 * space, tab, newline and backslash as octal); none when it cannot be read.
 */
export function mountPoints(): string[] {
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((field): field is string => Boolean(field))
    .map((field) =>
      field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))),
    );
}
