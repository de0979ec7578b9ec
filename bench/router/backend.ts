import { createServer, type RequestListener } from 'node:http';

// The app behind the router, on TCP (the direct rows) and on a Unix socket (what the router talks to),
// from one process so both paths hit the same server. BENCH_WORK_US: CPU time each request spends
// (0: the cheapest HTML answer Node can give; a real app spends far more).
const workUs = Number(process.env.BENCH_WORK_US ?? 0);
const body = `<!doctype html><title>app</title><p>${'hello from the sandbox app '.repeat(8)}</p>\n`;
const handler: RequestListener = (_request, response) => {
  if (workUs > 0) {
    const until = process.hrtime.bigint() + BigInt(workUs * 1000);
    while (process.hrtime.bigint() < until);
  }
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  response.end(body);
};
const tcp = createServer(handler);
const unix = createServer(handler);
unix.listen(process.env.BENCH_SOCKET!, () => {
  tcp.listen(0, '127.0.0.1', () => {
    const address = tcp.address();
    process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
  });
});
