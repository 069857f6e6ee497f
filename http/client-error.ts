/**
 * Requests Node refuses before Hono sees them (headers over Node's 16 KB, a request that cannot
 * be parsed) answered in the spec's error shape instead of Node's bare status line: a raw HTTP
 * answer written on the socket from the server's 'clientError' event. Headers over the limit are
 * 400 `bad_request` (the request could not be read; 431 is not among the spec's statuses).
 */
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, type ErrorCode, ignore } from '../shared/errors.ts';

function raw(status: number, reason: string, code: ErrorCode, message: string): string {
  const body = JSON.stringify(new ApiError(code, message).toBody());
  return (
    `HTTP/1.1 ${status} ${reason}\r\n` +
    'content-type: application/json; charset=utf-8\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n\r\n' +
    body
  );
}

/** The answer to a request Node's parser refused, by its error code. */
export function clientErrorAnswer(code: string | undefined): string {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return raw(400, 'Bad Request', 'bad_request', 'the request headers are over the limit of 16 KB');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return raw(413, 'Payload Too Large', 'payload_too_large', 'the chunk extensions are over the limit');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return raw(408, 'Request Timeout', 'bad_request', 'the request did not arrive in time');
    default:
      return raw(400, 'Bad Request', 'bad_request', 'the request could not be read as HTTP');
  }
}

/** Answers Node's refused requests on `server` in the error shape. */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(clientErrorAnswer(err.code));
    // Read on and drop what the client still sends (the rest of its headers): closing with unread
    // bytes would send a reset, and the client could lose the answer. Cut off after 2 s at most.
    socket.on('error', ignore('the answer is sent; what the client still sends is dropped, and a reset then is expected'));
    socket.resume();
    setTimeout(() => socket.destroy(), 2000).unref();
  });
}
