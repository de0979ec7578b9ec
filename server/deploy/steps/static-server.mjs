// The built-in static file server for repositories that are a plain site (index.html) or documents only
// (a README). It runs inside the sandbox like any app, so it is a dependency-free script: PORT in, files of
// the working directory out. A directory without index.html gets a page of its README and its files, as
// GitHub shows a repository.
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';

const types = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
};
const root = process.cwd();
const README = /^readme(\.(md|markdown|txt|rst))?$/i;
/** A README larger than this is cut on the index page (the file itself is served whole). */
const README_SHOWN_BYTES = 512 * 1024;

const escape = (text) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );

async function directoryPage(dir, urlPath) {
  const entries = (await readdir(dir, { withFileTypes: true }))
    .filter((entry) => !entry.name.startsWith('.'))
    .map((entry) => ({ name: entry.name, directory: entry.isDirectory() }))
    .sort((a, b) => Number(b.directory) - Number(a.directory) || a.name.localeCompare(b.name));
  const readme = entries.find((entry) => !entry.directory && README.test(entry.name));
  let readmeText = '';
  if (readme) {
    const bytes = await readFile(join(dir, readme.name));
    readmeText = bytes.subarray(0, README_SHOWN_BYTES).toString('utf8');
  }
  const title = urlPath === '/' ? 'Files' : urlPath;
  const links = entries
    .map(({ name, directory }) => {
      const href = encodeURIComponent(name) + (directory ? '/' : '');
      return `<li><a href="${href}">${escape(name)}${directory ? '/' : ''}</a></li>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:50rem;margin:2rem auto;padding:0 1rem}
pre{white-space:pre-wrap;background:#f6f8fa;padding:1rem;border-radius:6px}</style></head>
<body>
${readme ? `<h1>${escape(readme.name)}</h1>\n<pre>${escape(readmeText)}</pre>` : ''}
<h2>${escape(title)}</h2>
<ul>
${links}
</ul>
</body>
</html>
`;
}

createServer(async (req, res) => {
  try {
    let path;
    try {
      path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('bad path');
      return;
    }
    let file = join(root, path);
    if (!file.startsWith(root) || path.split('/').some((part) => part.startsWith('.') && part !== '.')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    let info;
    try {
      info = await stat(file);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (info.isDirectory()) {
      // Relative links of the directory's page resolve against a path ending in '/'.
      if (!path.endsWith('/')) {
        res.writeHead(301, { location: `${encodeURI(path)}/` }).end();
        return;
      }
      const index = join(file, 'index.html');
      const hasIndex = await stat(index).then(
        (s) => s.isFile(),
        () => false,
      );
      if (!hasIndex) {
        res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(await directoryPage(file, path));
        return;
      }
      file = index;
    }
    const name = file.slice(file.lastIndexOf('/') + 1);
    const type = README.test(name) ? 'text/plain; charset=utf-8' : types[extname(file)];
    res.writeHead(200, { 'content-type': type ?? 'application/octet-stream' });
    createReadStream(file)
      .on('error', () => res.destroy())
      .pipe(res);
  } catch {
    // One bad request never takes the site down.
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end('error');
  }
}).listen(Number(process.env.PORT), '127.0.0.1');
