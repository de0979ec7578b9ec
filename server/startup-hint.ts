/**
 * What `npm start` prints once Twinbox listens: where to click, where sign-in codes go without SMTP,
 * and (outside production, once the local owner's key exists) a curl that deploys a public repository.
 */
export function startupHint(hint: {
  /** Where the web pages are (TWINBOX_WEB_URL, else the public URL). */
  webUrl: string;
  /** Directory of mail files when there is no SMTP server; sign-in codes are read from there. */
  outbox?: string;
  /** A ready-to-paste command, when there is a key to put in it. */
  sample?: string;
}): string {
  const lines = [
    '',
    `Open ${hint.webUrl}/dashboard in a browser (new here? ${hint.webUrl}/signup; returning: ${hint.webUrl}/login).`,
  ];
  if (hint.outbox) lines.push(`Sign-in codes are mailed as files to ${hint.outbox}/ (SMTP_URL is not set).`);
  if (hint.sample) lines.push('', 'Or create a sandbox from the command line:', '', hint.sample);
  return `${lines.join('\n')}\n\n`;
}
