import { readdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Plugin } from '@hapi/hapi';
import { notFound } from '../errors.ts';

const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** The files of server/web/assets/, read once at start: only those names are ever served. */
function loadAssets(): Map<string, Asset> {
  const dir = fileURLToPath(new URL('./assets/', import.meta.url));
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const body = readFileSync(join(dir, name));
    assets.set(name, {
      body,
      type,
      etag: createHash('sha256').update(body).digest('base64url').slice(0, 16),
    });
  }
  return assets;
}

/** `GET /assets/{name}`: the pages' stylesheet and scripts (the CSP allows scripts from here only). */
export const assetRoutes: Plugin<void> = {
  name: 'twinbox-web-assets',
  register(server) {
    const assets = loadAssets();
    server.route({
      method: 'GET',
      path: '/assets/{name}',
      options: { auth: false, plugins: { web: true } },
      handler(request, h) {
        const asset = assets.get(String(request.params.name));
        if (!asset) throw notFound(`No asset ${String(request.params.name)}.`);
        return h
          .response(asset.body)
          .type(asset.type)
          .etag(asset.etag)
          .header('Cache-Control', 'public, max-age=300')
          .header('X-Content-Type-Options', 'nosniff');
      },
    });
  },
};
