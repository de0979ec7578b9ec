/**
 * A hostile "GitHub" for the source fetcher: the REST paths GitHubSource calls, answering with whatever
 * archive, tree or blobs a test hands it. The GitHub twin only ever serves well-formed repositories; the
 * attacks need archives no honest server makes.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

export interface TarEntry {
  /** The full path inside the archive, top directory included. */
  name: string;
  /** Tar type flag: '0' file, '1' hard link, '2' symlink, '3' char device, '5' directory, 'x' pax header. */
  type?: string;
  mode?: number;
  linkname?: string;
  content?: Buffer;
  /** Declared size when it differs from the content (only for headers whose data follows separately). */
  size?: number;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

export function tarHeader(entry: TarEntry): Buffer {
  const block = Buffer.alloc(512);
  block.write(entry.name, 0, 100, 'utf8');
  block.write(octal(entry.mode ?? 0o644, 8), 100, 8, 'ascii');
  block.write(octal(0, 8), 108, 8, 'ascii');
  block.write(octal(0, 8), 116, 8, 'ascii');
  block.write(octal(entry.size ?? entry.content?.length ?? 0, 12), 124, 12, 'ascii');
  block.write(octal(1_700_000_000, 12), 136, 12, 'ascii');
  block.write('        ', 148, 8, 'ascii');
  block.write(entry.type ?? '0', 156, 1, 'ascii');
  if (entry.linkname) block.write(entry.linkname, 157, 100, 'utf8');
  block.write('ustar\0', 257, 6, 'ascii');
  block.write('00', 263, 2, 'ascii');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(octal(sum, 7) + ' ', 148, 8, 'ascii');
  return block;
}

const pad = (length: number) => Buffer.alloc((512 - (length % 512)) % 512);

/** An uncompressed tar of `entries`, without the end-of-archive blocks (see `END`). */
export function tarBody(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    parts.push(tarHeader(entry));
    if (entry.content) parts.push(entry.content, pad(entry.content.length));
  }
  return Buffer.concat(parts);
}

/** The two zero blocks that end a tar archive. */
export const END = Buffer.alloc(1024);

export interface TreeItem {
  path: string;
  mode?: string;
  type?: 'blob' | 'tree' | 'commit';
  content?: Buffer;
  /** Declared size when it should differ from the content's (a lying listing). */
  size?: number;
}

export interface FakeRepo {
  /** The gzipped tarball; null answers 404 so the fetcher takes the trees path. */
  tarball: Buffer | null;
  tree?: TreeItem[];
  truncated?: boolean;
  /** Answer blobs as base64 inside JSON whatever the Accept header says (as the GitHub twin does). */
  jsonBlobs?: boolean;
}

export interface FakeGitHub {
  url: string;
  /** Method and path of every request, in order. */
  requests: string[];
}

const gitSha = (content: Buffer) =>
  createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');

/** Serves `repo` as octo/app on 127.0.0.1 (port 0); closed when the test ends. */
export async function startFakeGitHub(t: Test, repo: FakeRepo): Promise<FakeGitHub> {
  const blobs = new Map<string, Buffer>();
  const tree = (repo.tree ?? []).map((item) => {
    const type = item.type ?? 'blob';
    const sha = item.content ? gitSha(item.content) : createHash('sha1').update(item.path).digest('hex');
    if (item.content) blobs.set(sha, item.content);
    return {
      path: item.path,
      mode: item.mode ?? (type === 'tree' ? '040000' : '100644'),
      type,
      sha,
      ...(type === 'blob' ? { size: item.size ?? item.content?.length ?? 0 } : {}),
    };
  });
  const requests: string[] = [];
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push(`${req.method} ${path}`);
    let m: RegExpExecArray | null;
    if ((m = /^\/repos\/octo\/app\/tarball\/(\w+)$/.exec(path))) {
      if (!repo.tarball) return json(res, 404, { message: 'Not Found' });
      // As GitHub does: a redirect to a codeload URL that serves the archive.
      res.writeHead(302, { location: `${url}/codeload/octo/app/legacy.tar.gz/${m[1]}` });
      return res.end();
    }
    if (/^\/codeload\/octo\/app\/legacy\.tar\.gz\/\w+$/.test(path) && repo.tarball) {
      res.writeHead(200, { 'content-type': 'application/x-gzip', 'content-length': repo.tarball.length });
      return res.end(repo.tarball);
    }
    if ((m = /^\/repos\/octo\/app\/git\/commits\/(\w+)$/.exec(path))) {
      return json(res, 200, { sha: m[1], tree: { sha: 'f'.repeat(40) } });
    }
    if (path === `/repos/octo/app/git/trees/${'f'.repeat(40)}`) {
      return json(res, 200, { sha: 'f'.repeat(40), tree, truncated: repo.truncated ?? false });
    }
    if ((m = /^\/repos\/octo\/app\/git\/blobs\/(\w+)$/.exec(path))) {
      const content = blobs.get(m[1]!);
      if (!content) return json(res, 404, { message: 'Not Found' });
      if (!repo.jsonBlobs && /vnd\.github(\.v3)?\.raw/.test(req.headers.accept ?? '')) {
        res.writeHead(200, {
          'content-type': 'application/vnd.github.raw',
          'content-length': content.length,
        });
        return res.end(content);
      }
      // GitHub wraps base64 at 60 columns.
      const base64 = content.toString('base64').replace(/.{60}/g, '$&\n');
      return json(res, 200, { sha: m[1], size: content.length, content: base64, encoding: 'base64' });
    }
    json(res, 404, { message: 'Not Found' });
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url, requests };
}
