import { STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';

/**
 * Takes over the listener's `clientError` (bytes Node's HTTP parser refuses) from hapi.
 *
 * hapi answers a parse error on a connection whose request is still in its lifecycle by replying to that
 * request from outside the lifecycle; the lifecycle then sets its own response over the one being sent,
 * which closes it mid-marshal, and the AssertError that follows is an unhandled rejection: the process
 * exits (hapijs/hapi#4363, open in 21.4.10). One TCP packet did it: a body shorter than its
 * Content-Length followed by garbage. Here a request in progress is never answered from outside:
 * - no request on the connection: the status Node would send (400; 431 for oversized headers, 408 for
 *   a request too slow to arrive) with the usual error body, `detail` included; the connection closes;
 * - a request whose body is complete (the garbage is a pipelined next request): it is answered as
 *   usual and the connection closes after it;
 * - a request whose body is cut short: the connection is destroyed, which hapi handles as a client that
 *   went away (its body would never arrive).
 */
export function guardClientErrors(listener: Server, logger: Logger): void {
  listener.removeAllListeners('clientError');
  listener.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    logger.debug({ err: { code: error.code, message: error.message } }, 'refused bytes that are not HTTP');
    // The response in flight on this connection, whoever serves it (hapi or the sandbox router): Node's
    // own clientError fallback looks at the same property.
    const res = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (res && !res.writableFinished) {
      if (res.req.complete) res.once('close', () => socket.destroy());
      else socket.destroy();
      return;
    }
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, message] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request headers are too large.']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'The request took too long to arrive.']
          : [400, 'The request is not valid HTTP/1.1 (request line, headers or body framing).'];
    const body = JSON.stringify({
      statusCode: status,
      error: STATUS_CODES[status],
      message,
      detail: message,
    });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
