import { domainToASCII } from 'node:url';

export class InvalidEmailError extends Error {
  constructor(reason: string) {
    super(`Invalid e-mail address: ${reason}.`);
    this.name = 'InvalidEmailError';
  }
}

/** Characters that render as nothing, so two addresses that look the same cannot differ by them. */
const INVISIBLE =
  /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0]/gu;
/** The unquoted local part of RFC 5322 (dot-atom); quoted local parts are refused. */
const LOCAL_PART = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * The one normalizer every entry point uses (spec: trimmed, lowercased), plus Unicode NFKC and the
 * removal of invisible characters, and the domain in its ASCII (punycode) form. Throws
 * InvalidEmailError for anything that still does not look like a plain address.
 */
export function normalizeEmail(input: string): string {
  // NFKC turns a full-width "＠" into "@"; an address typed with one is refused, not reinterpreted.
  const atSigns = (input.match(/@/g) ?? []).length;
  const folded = input.normalize('NFKC').replace(INVISIBLE, '').trim().toLowerCase();
  if ((folded.match(/@/g) ?? []).length !== atSigns) throw new InvalidEmailError('unexpected "@" look-alike');
  if (folded.length === 0) throw new InvalidEmailError('it is empty');
  const parts = folded.split('@');
  if (parts.length !== 2) throw new InvalidEmailError('it must contain exactly one "@"');
  const [local, rawDomain] = parts as [string, string];
  if (!LOCAL_PART.test(local) || local.length > 64)
    throw new InvalidEmailError('the part before "@" is not valid');
  const domain = domainToASCII(rawDomain);
  const labels = domain.split('.');
  if (!domain || labels.length < 2 || !labels.every((label) => DOMAIN_LABEL.test(label))) {
    throw new InvalidEmailError('the domain is not valid');
  }
  const email = `${local}@${domain}`;
  if (email.length > 254) throw new InvalidEmailError('it is longer than 254 characters');
  return email;
}
