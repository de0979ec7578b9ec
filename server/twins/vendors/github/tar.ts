import { gzipSync } from 'node:zlib';

/** A file of a repository archive: path relative to the archive root, and its bytes. */
export interface TarFile {
  path: string;
  content: Buffer;
  mode?: number;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, mode: number, type: string, mtime: number): Buffer {
  const block = Buffer.alloc(512);
  block.write(name, 0, 100, 'utf8');
  block.write(octal(mode, 8), 100, 8, 'ascii');
  block.write(octal(0, 8), 108, 8, 'ascii');
  block.write(octal(0, 8), 116, 8, 'ascii');
  block.write(octal(size, 12), 124, 12, 'ascii');
  block.write(octal(mtime, 12), 136, 12, 'ascii');
  block.write('        ', 148, 8, 'ascii');
  block.write(type, 156, 1, 'ascii');
  block.write('ustar\0', 257, 6, 'ascii');
  block.write('00', 263, 2, 'ascii');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(octal(sum, 7) + ' ', 148, 8, 'ascii');
  return block;
}

function padded(content: Buffer): Buffer[] {
  const rest = content.length % 512;
  return rest === 0 ? [content] : [content, Buffer.alloc(512 - rest)];
}

/** A pax extended header carrying a path longer than ustar's 100 bytes. */
function paxPath(path: string, mtime: number): Buffer[] {
  const record = (len: number) => `${len} path=${path}\n`;
  let len = Buffer.byteLength(record(0));
  while (Buffer.byteLength(record(len)) !== len) len = Buffer.byteLength(record(len));
  const body = Buffer.from(record(len));
  return [header('PaxHeader', body.length, 0o644, 'x', mtime), ...padded(body)];
}

/**
 * A gzipped tar like GitHub's tarball endpoint returns: every entry under one `<owner>-<repo>-<sha7>/`
 * directory. Written by hand because it is ~50 lines and no tar library is among our dependencies.
 */
export function gzipTar(root: string, files: TarFile[], mtime = Math.floor(Date.now() / 1000)): Buffer {
  const parts: Buffer[] = [header(`${root}/`, 0, 0o755, '5', mtime)];
  for (const file of files) {
    const name = `${root}/${file.path}`;
    if (Buffer.byteLength(name) > 100) parts.push(...paxPath(name, mtime));
    parts.push(
      header(name.slice(0, 100), file.content.length, file.mode ?? 0o644, '0', mtime),
      ...padded(file.content),
    );
  }
  parts.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(parts));
}
