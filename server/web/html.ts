/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A tagged template whose every interpolation is escaped, unless it is already `Html`. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let text = strings[0]!;
  values.forEach((value, i) => {
    const part = Array.isArray(value)
      ? value.map((v) => (v instanceof Html ? v.text : escapeHtml(v))).join('')
      : value instanceof Html
        ? value.text
        : escapeHtml(value);
    text += part + strings[i + 1]!;
  });
  return new Html(text);
}

export function page(title: string, body: Html): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Twinbox</title>
        <style>
          body {
            font:
              16px/1.5 system-ui,
              sans-serif;
            max-width: 36rem;
            margin: 3rem auto;
            padding: 0 1rem;
          }
          .error {
            background: #fdecea;
            border: 1px solid #f5c2c0;
            padding: 0.75rem;
            border-radius: 4px;
          }
          .notice {
            background: #eaf5ea;
            border: 1px solid #bfe0bf;
            padding: 0.75rem;
            border-radius: 4px;
          }
          code {
            background: #f3f3f3;
            padding: 0 0.25rem;
            word-break: break-all;
          }
          form {
            margin: 1rem 0;
          }
        </style>
      </head>
      <body>
        <h1>${title}</h1>
        ${body}
      </body>
    </html> `.text;
}
