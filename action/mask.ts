import * as core from '@actions/core';

const maskedValues = new Set<string>();

/**
 * Asks the runner to mask `value` in every later log line. A value of several lines (a PEM private key)
 * is masked line by line too: the runner matches masks within a line, so the whole value alone would
 * leave its lines readable where they are printed one by one.
 */
export function maskValue(value: string | undefined): void {
  if (!value?.trim() || maskedValues.has(value)) return;
  maskedValues.add(value);
  core.setSecret(value);
  if (value.includes('\n')) for (const line of value.split(/\r?\n/)) maskValue(line);
}
