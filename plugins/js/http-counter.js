// The HTTP counter in JavaScript, for `wardlock serve` (see plugins/http-counter
// for the Rust original and the protocol):
//
//   POST /<name>   take the exclusive lock <name>, read the integer in
//                  /data/<name> (0 if absent), write it + 1 and answer 200 with
//                  the new value and the grant's token in `fencing-token`.
//
// Bad paths or lock names get 400 with the lock error's text.

import { acquire } from 'wardlock:lock/locks@0.1.0';
import { Fields, OutgoingBody, OutgoingResponse, ResponseOutparam } from 'wasi:http/types@0.2.12';
import { describeLockError, readValue, writeValue } from './wasi-file.js';

const encoder = new TextEncoder();

function reply(out, status, text, token) {
  const headers = new Fields();
  headers.append('content-type', encoder.encode('text/plain; charset=utf-8'));
  if (token !== undefined) headers.append('fencing-token', encoder.encode(String(token)));
  const response = new OutgoingResponse(headers);
  response.setStatusCode(status);
  const body = response.body();
  ResponseOutparam.set(out, { tag: 'ok', val: response });
  const stream = body.write();
  stream.blockingWriteAndFlush(encoder.encode(`${text}\n`));
  stream[Symbol.dispose]();
  OutgoingBody.finish(body, undefined);
}

function increment(name) {
  let lock;
  try {
    lock = acquire(name, { mode: 'exclusive' });
  } catch (e) {
    const tag = e?.payload?.tag;
    const status = tag === 'invalid-name' || tag === 'denied' ? 400 : 503;
    return [status, describeLockError(e)];
  }
  try {
    const path = `/data/${name}`;
    const value = readValue(path) + 1n;
    writeValue(path, value);
    const token = lock.fencingToken();
    lock.release();
    return [200, String(value), token];
  } catch (e) {
    return [500, describeLockError(e)];
  } finally {
    lock[Symbol.dispose]();
  }
}

export const incomingHandler = {
  handle(request, out) {
    if (request.method().tag !== 'post') {
      reply(out, 405, 'use POST /<name>');
      return;
    }
    const path = (request.pathWithQuery() ?? '/').split('?')[0];
    const name = path.replace(/^\/+/, '');
    if (name === '') {
      reply(out, 400, 'no counter name: POST /<name>');
      return;
    }
    const [status, text, token] = increment(name);
    reply(out, status, text, token);
  },
};
